import { z } from 'zod';
import { subjects } from '../subject.ts';

/** Accounting sync: the request that queues a push, and the durable job the push runs from. */

export const ACCOUNTING_SYNC_STATES = ['queued', 'synced', 'failed'] as const;
export const AccountingSyncState = z.enum(ACCOUNTING_SYNC_STATES);
export type AccountingSyncState = z.infer<typeof AccountingSyncState>;

/**
 * One push, on `svc.work.invoice.accounting_sync`. `version` is the invoice version asked for (the Idempotency-Key is
 * `<invoice_id>:<version>`); `attempt` is the invoice's push counter, so a newer request is recognisably newer.
 */
export const AccountingSyncJob = z.object({
  invoice_id: z.uuid(),
  version: z.number().int().min(1),
  attempt: z.number().int().min(1),
  requested_by: z.string().min(1).max(320),
});
export type AccountingSyncJob = z.infer<typeof AccountingSyncJob>;

export const invoiceAccountingSubjects = subjects({
  'svc.invoice.sync_accounting': {
    summary:
      'Queues a push of an approved or sent invoice to the accounting system (invoices:write); 200 once durably queued.',
    request: z.object({ id: z.uuid() }),
    reply: z.object({ message: z.string() }),
    errors: ['forbidden', 'not_found', 'bad_request', 'unavailable'],
  },
});
