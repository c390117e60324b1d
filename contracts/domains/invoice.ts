import { z } from 'zod';
import { subjects } from '../subject.ts';
import { AccountingSyncState } from './invoice-accounting.ts';
import { Amount, Currency, DateOnly, DealType, Key, Multiplier, Quantity, UnitPrice } from './invoice-fields.ts';

/** Invoicing (docs/api/invoicing.md). Amounts, hours, quantities and multipliers are decimal strings. */

export const INVOICE_STATUSES = ['draft', 'needs_review', 'declined', 'rejected', 'approved', 'sent'] as const;
export const InvoiceStatus = z.enum(INVOICE_STATUSES);
export type InvoiceStatus = z.infer<typeof InvoiceStatus>;

/** base (deal's base amount), task (tracked work), overtime, usage (metered), manual (added by a person). */
export const LINE_TYPES = ['base', 'task', 'overtime', 'usage', 'manual'] as const;
export const LineType = z.enum(LINE_TYPES);
/** analytics: built from the analytics store; manual: added by a person. */
export const LineSource = z.enum(['analytics', 'manual']);

const Text = (max: number) => z.string().max(max, 'is too long');
const Seconds = z.number().int('must be an integer').min(0).max(2_147_483_647);

export const LineItem = z.object({
  id: z.uuid(),
  line_type: z.string(),
  description: z.string(),
  tracker_key: z.string().nullable(),
  time_seconds: z.number().int(),
  billable_seconds: z.number().int(),
  unit_price: z.string(),
  quantity: z.string(),
  line_total: z.string(),
  rate_tier: z.string().nullable(),
  rate_multiplier: z.string(),
  source: z.string(),
  is_auto_generated: z.boolean(),
  sort_order: z.number().int(),
  linked_issue_key: z.string().nullable(),
  worklog_date: z.string().nullable(),
});
export type LineItem = z.infer<typeof LineItem>;

/** A line in a request (generate, line-item add): no id. `line_total`, when sent, must be what the policy computes. */
export const LineItemInput = z.object({
  line_type: LineType,
  description: z.string().trim().min(1, 'must not be empty').max(1000, 'is too long'),
  tracker_key: Text(100).nullable().optional(),
  time_seconds: Seconds.default(0),
  billable_seconds: Seconds.default(0),
  unit_price: UnitPrice,
  quantity: Quantity,
  line_total: Amount.optional(),
  rate_tier: Text(100).nullable().optional(),
  rate_multiplier: Multiplier.default('1.0000'),
  source: LineSource.default('manual'),
  /** Derived from `source` (analytics lines are the automatic ones); when sent it must agree. */
  is_auto_generated: z.boolean().optional(),
  sort_order: z.number().int().min(0).max(1_000_000).optional(),
  linked_issue_key: Text(100).nullable().optional(),
  worklog_date: DateOnly.nullable().optional(),
});
export type LineItemInput = z.output<typeof LineItemInput>;

/** The invoice-level figures, all computed from the lines. */
const Figures = {
  base_amount: z.string(),
  overtime_hours: z.string(),
  overtime_amount: z.string(),
  total_amount: z.string(),
  total_hours: z.string(),
  is_overtime: z.boolean(),
};

export const Customer = z.object({
  customer_key: z.string(),
  name: z.string(),
  email: z.string(),
  address: z.string(),
  country: z.string(),
  vat_id: z.string(),
});
export const Application = z.object({
  application_key: z.string(),
  customer_key: z.string(),
  name: z.string(),
  is_active: z.boolean(),
  deal_type: z.string(),
  currency: z.string(),
  base_amount: z.string(),
  included_hours: z.string(),
  hourly_rate: z.string(),
  overtime_rate: z.string(),
});

/** What a preview and an invoice both say about the billing: application, customer, period, deal and figures. */
const Head = {
  application_key: z.string(),
  customer_key: z.string(),
  period_start: z.string(),
  period_end: z.string(),
  deal_type: z.string(),
  currency: z.string(),
  ...Figures,
};

export const Preview = z.object({
  ...Head,
  line_items: z.array(LineItem.omit({ id: true })),
  /** null when the analytics store has no record of the application's customer. */
  customer: Customer.nullable(),
  application: Application,
});
export type Preview = z.infer<typeof Preview>;

export const Invoice = z.object({
  id: z.uuid(),
  display_number: z.string(),
  ...Head,
  status: InvoiceStatus,
  version: z.number().int(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  invoice_date: z.string(),
  show_task_list: z.boolean(),
  show_tracked_time: z.boolean(),
  show_task_pricing: z.boolean(),
  show_overtime: z.boolean(),
  legal_text: z.string(),
  html_override: z.string().nullable(),
  /** Accounting sync: null until sync-accounting is first asked for; see actors/invoice/accounting/. */
  accounting_sync_state: AccountingSyncState.nullable(),
  accounting_sync_at: z.iso.datetime().nullable(),
  accounting_external_id: z.string().nullable(),
  accounting_sync_error: z.string().nullable(),
  accounting_synced_version: z.number().int().nullable(),
  line_items: z.array(LineItem),
});
export type Invoice = z.infer<typeof Invoice>;

/** List items carry exactly these fields (docs/api/invoicing.md#api-notes, "list"). */
export const InvoiceListItem = Invoice.pick({
  id: true,
  display_number: true,
  application_key: true,
  customer_key: true,
  period_start: true,
  period_end: true,
  deal_type: true,
  currency: true,
  total_amount: true,
  status: true,
  created_at: true,
});
export type InvoiceListItem = z.infer<typeof InvoiceListItem>;

/** A period is at most this long: one query must stay bounded. */
export const MAX_PERIOD_DAYS = 366;
const periodOk = (p: { period_start?: string | undefined; period_end?: string | undefined }): boolean =>
  p.period_start === undefined || p.period_end === undefined || p.period_start <= p.period_end;
const periodShort = (p: { period_start?: string | undefined; period_end?: string | undefined }): boolean =>
  p.period_start === undefined ||
  p.period_end === undefined ||
  Date.parse(p.period_end) - Date.parse(p.period_start) < MAX_PERIOD_DAYS * 86_400_000;
const periodRules = <T extends z.ZodType<{ period_start?: string | undefined; period_end?: string | undefined }>>(
  schema: T,
) =>
  schema
    .refine(periodOk, { message: 'must not be before period_start', path: ['period_end'] })
    .refine(periodShort, { message: `a period is at most ${MAX_PERIOD_DAYS} days`, path: ['period_end'] });

export const PrefillBody = periodRules(
  z
    .object({ application_key: Key, period_start: DateOnly.optional(), period_end: DateOnly.optional() })
    .refine((b) => (b.period_start === undefined) === (b.period_end === undefined), {
      message: 'give both period_start and period_end, or neither',
      path: ['period_end'],
    }),
);

/**
 * Generate: application_key, period_start, period_end and line_items are required. deal_type, currency and the
 * invoice-level figures are optional (a Preview can be sent back as it is); when present they must equal what the
 * application and the lines give, so a draft can never disagree with its own lines.
 */
export const GenerateBody = periodRules(
  z.object({
    application_key: Key,
    period_start: DateOnly,
    period_end: DateOnly,
    deal_type: DealType.optional(),
    currency: Currency.optional(),
    base_amount: Amount.optional(),
    total_amount: Amount.optional(),
    total_hours: Quantity.optional(),
    overtime_hours: Quantity.optional(),
    overtime_amount: Amount.optional(),
    is_overtime: z.boolean().optional(),
    line_items: z.array(LineItemInput).max(2000, 'at most 2000 line items'),
  }),
);

export const GenerateBulkBody = periodRules(z.object({ period_start: DateOnly, period_end: DateOnly }));

/** One application of a bulk run: the draft created, or the invoice it already had for the period (skipped). */
export const BulkEntry = z.object({
  id: z.uuid(),
  display_number: z.string(),
  application_key: z.string(),
  status: InvoiceStatus,
  skipped: z.boolean(),
  reason: z.string().nullable(),
});

export const InvoiceListQuery = z.object({
  status: InvoiceStatus.optional(),
  application_key: Key.optional(),
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
});

const ById = z.object({ id: z.uuid() });

/** Optional optimistic check: when sent, the invoice must still be at this version (409 CONFLICT otherwise). */
const ExpectedVersion = z.number().int().min(1).optional();

/**
 * PATCH invoice: the editable fields only (docs/api/invoicing.md#api-notes), draft only. The amount figures are sums
 * over the lines, so editing one changes the lines (see actors/invoice/invoices/edits.ts): base_amount rewrites the
 * base line, overtime_hours/overtime_amount the overtime line, total_amount adds an adjustment line for the difference.
 */
export const UpdateInvoiceBody = z
  .object({
    base_amount: Amount.optional(),
    total_amount: Amount.optional(),
    overtime_hours: Quantity.optional(),
    overtime_amount: Amount.optional(),
    is_overtime: z.boolean().optional(),
    invoice_date: DateOnly.optional(),
    show_task_list: z.boolean().optional(),
    show_tracked_time: z.boolean().optional(),
    show_task_pricing: z.boolean().optional(),
    show_overtime: z.boolean().optional(),
    legal_text: z.string().max(10_000, 'is too long').optional(),
    /** null clears it. */
    html_override: z.string().max(1_000_000, 'is too long').nullable().optional(),
    version: ExpectedVersion,
  })
  .strict();
export type UpdateInvoiceBody = z.output<typeof UpdateInvoiceBody>;

/** A line update: the id plus the fields that change (only those change). The total follows quantity × unit price. */
export const LineItemPatch = LineItemInput.omit({ source: true, is_auto_generated: true })
  .extend({
    time_seconds: LineItemInput.shape.time_seconds.unwrap(),
    billable_seconds: LineItemInput.shape.billable_seconds.unwrap(),
    rate_multiplier: Multiplier,
  })
  .partial()
  .extend({ id: z.uuid() })
  .strict();
export type LineItemPatch = z.output<typeof LineItemPatch>;

export const LineItemsBody = z
  .object({
    add: z.array(LineItemInput).max(1000).default([]),
    update: z.array(LineItemPatch).max(1000).default([]),
    remove: z.array(z.uuid()).max(1000).default([]),
    version: ExpectedVersion,
  })
  .strict()
  .refine((b) => new Set([...b.update.map((u) => u.id), ...b.remove]).size === b.update.length + b.remove.length, {
    message: 'a line id may appear once across update and remove',
    path: ['update'],
  });
export type LineItemsBody = z.output<typeof LineItemsBody>;

export const EditHistoryEntry = z.object({
  id: z.uuid(),
  invoice_id: z.uuid(),
  line_item_id: z.uuid().nullable(),
  edit_type: z.string(),
  field_name: z.string().nullable(),
  old_value: z.string().nullable(),
  new_value: z.string().nullable(),
  edited_by: z.string(),
  edited_at: z.iso.datetime(),
});

/** Review moves (ours): approve/reject/decline from needs_review, send from approved. */
export const REVIEW_ACTIONS = ['approve', 'reject', 'decline', 'send'] as const;
export const ReviewAction = z.enum(REVIEW_ACTIONS);
export const ReviewBody = z.object({ comment: z.string().trim().max(2000, 'is too long').optional() }).strict();

/**
 * An invoice entered review, or left it (approved, rejected, declined): published by the move itself, in its
 * transaction. Notifications read it to tell reviewers and owners (docs/api/notifications.md).
 */
export const InvoiceReviewChanged = z.object({
  invoice_id: z.uuid(),
  display_number: z.string(),
  application_key: z.string(),
  customer_key: z.string(),
  period_start: z.string(),
  period_end: z.string(),
  /** Decimal, as the invoice states it. */
  total_amount: z.string(),
  currency: z.string(),
  status: z.enum(['needs_review', 'approved', 'rejected', 'declined']),
  previous_status: InvoiceStatus,
  /** The version the move made. */
  version: z.number().int(),
  /** Who made the move (the editor the history records). */
  by: z.string(),
  comment: z.string().nullable(),
  at: z.iso.datetime(),
});
export type InvoiceReviewChanged = z.infer<typeof InvoiceReviewChanged>;

export const invoiceSubjects = subjects({
  'svc.invoice.health': {
    retry: 'safe',
    summary: 'Checks the stores the invoice actors depend on (the analytics store).',
    request: z.object({}),
    reply: z.object({ analytics_store: z.string() }),
    errors: [],
  },
  'svc.invoice.prefill': {
    retry: 'safe',
    summary:
      'Builds the invoice of one application and period from the analytics store (invoices:read); saves nothing.',
    request: PrefillBody,
    reply: Preview,
    errors: ['forbidden', 'not_found'],
  },
  'svc.invoice.generate': {
    summary: 'Saves a draft with the next display number (invoices:write).',
    request: GenerateBody,
    reply: Invoice,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.invoice.generate_bulk': {
    summary:
      'A draft for every active application and the period; applications already invoiced for it are skipped (invoices:write).',
    request: GenerateBulkBody,
    reply: z.array(BulkEntry),
    errors: ['forbidden'],
  },
  'svc.invoice.list': {
    retry: 'safe',
    summary: 'Invoices, newest number first, filtered by status and application (invoices:read).',
    request: InvoiceListQuery,
    reply: z.object({
      items: z.array(InvoiceListItem),
      total: z.number().int().nonnegative(),
      page: z.number().int().min(1),
      per_page: z.number().int().min(1),
    }),
    errors: ['forbidden'],
  },
  'svc.invoice.update': {
    summary:
      'Edits the editable fields of a draft (invoices:write); every change is in the edit history and bumps the version.',
    request: UpdateInvoiceBody.extend({ id: z.uuid() }),
    reply: Invoice,
    errors: ['forbidden', 'not_found', 'conflict', 'bad_request'],
  },
  'svc.invoice.line_items.update': {
    summary: 'Adds, updates and removes line items of a draft in one transaction; totals follow (invoices:write).',
    request: LineItemsBody.safeExtend({ id: z.uuid() }),
    reply: Invoice,
    errors: ['forbidden', 'not_found', 'conflict', 'bad_request'],
  },
  'svc.invoice.edit_history': {
    retry: 'safe',
    summary: 'The edit history of an invoice, oldest first (invoices:read).',
    request: ById,
    reply: z.array(EditHistoryEntry),
    errors: ['forbidden', 'not_found'],
  },
  'svc.invoice.review': {
    summary:
      'Moves an invoice through review: approve/reject/decline from needs_review, send from approved (invoices:review).',
    request: ReviewBody.extend({ id: z.uuid(), action: ReviewAction }),
    reply: Invoice,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.invoice.get': {
    retry: 'safe',
    summary: 'One invoice with all its line items (invoices:read).',
    request: ById,
    reply: Invoice,
    errors: ['forbidden', 'not_found'],
  },
});
