import { z } from 'zod';
import {
  Currency,
  DateOnly,
  DealType,
  Key,
  Multiplier,
  PositiveAmount,
  PositiveQuantity,
  UnitPrice,
} from './invoice-fields.ts';

/**
 * One batch of analytics records for the invoicing model, published by other systems (time tracking, usage meters,
 * `npm run seed:demo`) on the work subject `svc.work.invoice.analytics_ingest` (contracts/streams.ts). Each record
 * carries its natural id; a batch delivered twice leaves one row per id (ReplacingMergeTree, newest ingest wins).
 */

export const CustomerRecord = z.object({
  customer_key: Key,
  name: z.string().min(1).max(200),
  email: z.string().max(320).default(''),
  address: z.string().max(500).default(''),
  country: z.string().max(2).default(''),
  vat_id: z.string().max(50).default(''),
});

export const ApplicationRecord = z.object({
  application_key: Key,
  customer_key: Key,
  name: z.string().min(1).max(200),
  is_active: z.boolean(),
  deal_type: DealType,
  currency: Currency,
  base_amount: PositiveAmount,
  included_hours: PositiveQuantity,
  hourly_rate: PositiveAmount,
  overtime_rate: PositiveAmount,
});

export const RateTierRecord = z.object({
  rate_tier: Key,
  name: z.string().min(1).max(100),
  multiplier: Multiplier,
});

export const WorklogRecord = z.object({
  worklog_id: Key,
  application_key: Key,
  tracker_key: Key,
  linked_issue_key: z.string().max(100).default(''),
  description: z.string().max(1000).default(''),
  author: z.string().max(200).default(''),
  worklog_date: DateOnly,
  time_seconds: z.number().int().min(0).max(86_400),
  billable_seconds: z.number().int().min(0).max(86_400),
  rate_tier: Key,
});

export const UsageRecord = z.object({
  record_id: Key,
  application_key: Key,
  metric: z.string().min(1).max(100),
  unit: z.string().max(30).default(''),
  usage_date: DateOnly,
  quantity: PositiveQuantity,
  unit_price: UnitPrice,
});

/** At most this many records per batch (a NATS message is 1 MB at most by default). */
export const MAX_BATCH_RECORDS = 2_000;

export const AnalyticsBatch = z
  .object({
    batch_id: Key,
    customers: z.array(CustomerRecord).default([]),
    applications: z.array(ApplicationRecord).default([]),
    rate_tiers: z.array(RateTierRecord).default([]),
    worklogs: z.array(WorklogRecord).default([]),
    usage_records: z.array(UsageRecord).default([]),
  })
  .refine(
    (b) =>
      b.customers.length + b.applications.length + b.rate_tiers.length + b.worklogs.length + b.usage_records.length <=
      MAX_BATCH_RECORDS,
    {
      message: `a batch holds at most ${MAX_BATCH_RECORDS} records`,
    },
  );
export type AnalyticsBatch = z.output<typeof AnalyticsBatch>;
export type AnalyticsBatchIn = z.input<typeof AnalyticsBatch>;
