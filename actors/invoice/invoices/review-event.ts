import type { NatsConnection } from '@nats-io/transport-node';
import type { Invoice, InvoiceReviewChanged, InvoiceStatus } from '../../../contracts/domains/invoice.ts';
import type { Clock } from '../../../platform/clock.ts';
import { publishEvent } from '../../../platform/jetstream.ts';

/** What a review move (finalize, approve, reject, decline, send) needs besides its transaction. */
export interface MoveDeps {
  /** Who makes the move: the editor the history records. */
  editor: string;
  nc: NatsConnection;
  clock: Clock;
}

/**
 * Announces a review move on svc.evt.invoice.review. Called inside the move's transaction, after its UPDATE and
 * history: a publish that fails throws, so the move rolls back and the caller gets an error, never a move nobody was
 * told of. The message id is the invoice and the version the move made, so a retried move that had published before
 * its commit failed is stored once by the stream.
 */
export async function publishReviewMove(
  deps: MoveDeps,
  after: Invoice,
  move: { status: InvoiceReviewChanged['status']; previous: InvoiceStatus; comment: string | null },
): Promise<void> {
  await publishEvent(
    deps.nc,
    'svc.evt.invoice.review',
    {
      invoice_id: after.id,
      display_number: after.display_number,
      application_key: after.application_key,
      customer_key: after.customer_key,
      period_start: after.period_start,
      period_end: after.period_end,
      total_amount: after.total_amount,
      currency: after.currency,
      status: move.status,
      previous_status: move.previous,
      version: after.version,
      by: deps.editor,
      comment: move.comment,
      at: new Date(deps.clock.now()).toISOString(),
    },
    { msgId: `invoice-review:${after.id}:${after.version}` },
  );
}
