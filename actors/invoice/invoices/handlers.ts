import type { EntityManager } from '@mikro-orm/postgresql';
import { requirePermission } from '../../../contracts/access.ts';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Handlers } from '../../../platform/serve.ts';
import type { Period } from '../analytics/reader.ts';
import { sameDecimal, totalsOf } from '../amounts/totals.ts';
import { generateBulk } from './bulk.ts';
import { buildPreview, previousMonth } from './preview.ts';
import { fitsAmount, MAX_AMOUNT, toNewLine } from './lines-input.ts';
import { review, updateInvoice, updateLineItems } from './edits.ts';
import { readHistory } from './history.ts';
import { insertInvoice, listInvoices, loadInvoice, sql } from './store.ts';
import type { InvoiceDeps } from './deps.ts';

export type { InvoiceDeps };

/**
 * Permission model: invoices are not tied to console clients (their customers live in the analytics store), so the
 * checks take no client: `invoices:read` (prefill, list, get, preview, pdf, history), `invoices:write` (generate,
 * bulk, edits, finalize, regenerate, sync), `invoices:review` (approve, reject, decline, send), held on any client.
 */
export const READ = 'invoices:read';
export const WRITE = 'invoices:write';
export const REVIEW = 'invoices:review';

/** Who an edit or a draft is attributed to: the user's e-mail (or the service account's name). */
export function editorOf(ctx: CallerContext): string {
  const p = ctx.principal;
  if (p.kind === 'user') return p.email;
  if (p.kind === 'service_account') return `service-account:${p.name}`;
  return 'anonymous';
}

export const today = (clock: Clock): string => new Date(clock.now()).toISOString().slice(0, 10);

export function invoiceHandlers(deps: InvoiceDeps): Handlers<SystemCatalogue, 'invoice'> {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.invoice.prefill': async (input, { ctx }) => {
      requirePermission(ctx, READ);
      const period: Period =
        input.period_start && input.period_end
          ? { start: input.period_start, end: input.period_end }
          : previousMonth(deps.clock.now());
      const [data, tiers] = await Promise.all([
        deps.reader.forApplication(input.application_key, period),
        deps.reader.rateTiers(),
      ]);
      if (!data) throw new DomainError('not_found', 'application not found');
      return buildPreview(data, period, tiers);
    },

    'svc.invoice.generate': async (input, { ctx }) => {
      requirePermission(ctx, WRITE);
      const application = await deps.reader.application(input.application_key);
      if (!application) throw new DomainError('not_found', 'application not found');
      if (input.deal_type !== undefined && input.deal_type !== application.deal_type)
        throw new DomainError('bad_request', `body.deal_type: the application's deal type is ${application.deal_type}`);
      if (input.currency !== undefined && input.currency !== application.currency)
        throw new DomainError('bad_request', `body.currency: the application's currency is ${application.currency}`);
      const lines = input.line_items.map((l, i) => toNewLine(l, i, `body.line_items.${i}`));
      const totals = totalsOf(lines);
      if (!fitsAmount(totals.total_amount))
        throw new DomainError(
          'bad_request',
          `body.line_items: the invoice total (${totals.total_amount}) exceeds the largest amount, ${MAX_AMOUNT}`,
        );
      // Sent figures must be the ones the lines give: a draft never disagrees with its own lines.
      for (const field of [
        'base_amount',
        'total_amount',
        'total_hours',
        'overtime_hours',
        'overtime_amount',
      ] as const) {
        const sent = input[field];
        if (sent !== undefined && !sameDecimal(sent, totals[field]))
          throw new DomainError('bad_request', `body.${field}: the line items give ${totals[field]}`);
      }
      if (input.is_overtime !== undefined && input.is_overtime !== totals.is_overtime)
        throw new DomainError('bad_request', `body.is_overtime: the line items give ${totals.is_overtime}`);
      const customers = await deps.reader.customers([application.customer_key]);
      const em = fork();
      const id = await em.transactional((tx) =>
        insertInvoice(tx, {
          application_key: application.application_key,
          customer_key: application.customer_key,
          period_start: input.period_start,
          period_end: input.period_end,
          deal_type: application.deal_type,
          currency: application.currency,
          invoice_date: today(deps.clock),
          customer_snapshot: customers.get(application.customer_key) ?? null,
          application_snapshot: application,
          created_by: editorOf(ctx),
          ...totals,
          lines,
        }),
      );
      return loadInvoice(em, id);
    },

    'svc.invoice.generate_bulk': async (input, { ctx }) => {
      requirePermission(ctx, WRITE);
      return generateBulk(deps, { start: input.period_start, end: input.period_end }, editorOf(ctx), today(deps.clock));
    },

    'svc.invoice.list': async (input, { ctx }) => {
      requirePermission(ctx, READ);
      const { items, total } = await listInvoices(fork(), input);
      return { items, total, page: input.page, per_page: input.per_page };
    },

    'svc.invoice.update': async ({ id, ...body }, { ctx }) => {
      requirePermission(ctx, WRITE);
      return fork().transactional((tx) => updateInvoice(tx, id, body, editorOf(ctx)));
    },

    'svc.invoice.line_items.update': async ({ id, ...body }, { ctx }) => {
      requirePermission(ctx, WRITE);
      return fork().transactional((tx) => updateLineItems(tx, id, body, editorOf(ctx)));
    },

    'svc.invoice.edit_history': async ({ id }, { ctx }) => {
      requirePermission(ctx, READ);
      const em = fork();
      const [exists] = await sql<{ id: string }>(em, `SELECT id FROM invoices WHERE id = ?`, [id]);
      if (!exists) throw new DomainError('not_found', 'invoice not found');
      return readHistory(em, id);
    },

    'svc.invoice.review': async (input, { ctx }) => {
      requirePermission(ctx, REVIEW);
      const mover = { editor: editorOf(ctx), nc: deps.nc, clock: deps.clock };
      return fork().transactional((tx) => review(tx, input, mover));
    },

    'svc.invoice.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, READ);
      return loadInvoice(fork(), id);
    },
  };
}
