import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { requirePermission } from '../../../contracts/access.ts';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Config } from '../../../platform/config.ts';
import type { Logger } from '../../../platform/logger.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { editorOf, READ, WRITE } from '../invoices/handlers.ts';
import { loadRenderable, sql } from '../invoices/store.ts';
import type { AnalyticsReader } from '../analytics/reader.ts';
import { finalize } from '../lifecycle/finalize.ts';
import { regenerate } from '../lifecycle/regenerate.ts';
import type { PdfRenderer } from '../pdf/browser.ts';
import { readPdf } from '../pdf/store.ts';
import { renderInvoiceHtml } from '../render/template.ts';
import type { Seller } from '../render/view.ts';

export interface DocumentDeps {
  orm: MikroORM;
  seller: Seller;
  renderer: PdfRenderer;
  reader: AnalyticsReader;
  log: Logger;
  /** Where finalize announces the invoice entering review, and when. */
  nc: NatsConnection;
  clock: Clock;
}

export const sellerOf = (c: Config): Seller => ({
  name: c.SVC_INVOICE_SELLER_NAME,
  address: c.SVC_INVOICE_SELLER_ADDRESS,
  email: c.SVC_INVOICE_SELLER_EMAIL,
  vat_id: c.SVC_INVOICE_SELLER_VAT_ID,
});

/** A render never outlives the request that asked for it (nor 30 s). */
const renderBudget = (deadline: number): number => Math.max(1_000, Math.min(30_000, deadline - Date.now() - 250));

/** Invoice documents and their lifecycle: the HTML preview, finalize with its PDF (same template), the stored PDF, regenerate. */
export function documentHandlers(deps: DocumentDeps): Handlers<SystemCatalogue, 'invoice'> {
  return {
    'svc.invoice.preview_html': async ({ id }, { ctx }) => {
      requirePermission(ctx, READ);
      return { html: renderInvoiceHtml(await loadRenderable(deps.orm.em.fork(), id), deps.seller) };
    },

    'svc.invoice.finalize': async ({ id }, { ctx, deadline, log }) => {
      requirePermission(ctx, WRITE);
      return deps.orm.em.fork().transactional((tx) =>
        finalize(tx, id, {
          renderer: deps.renderer,
          seller: deps.seller,
          log,
          editor: editorOf(ctx),
          nc: deps.nc,
          clock: deps.clock,
          timeoutMs: renderBudget(deadline),
        }),
      );
    },

    'svc.invoice.regenerate': async ({ id }, { ctx }) => {
      requirePermission(ctx, WRITE);
      return deps.orm.em
        .fork()
        .transactional((tx) => regenerate(tx, id, { reader: deps.reader, editor: editorOf(ctx) }));
    },

    'svc.invoice.pdf': async ({ id }, { ctx }) => {
      requirePermission(ctx, READ);
      const em = deps.orm.em.fork();
      const [inv] = await sql<{ display_number: string }>(em, `SELECT display_number FROM invoices WHERE id = ?`, [id]);
      if (!inv) throw new DomainError('not_found', 'invoice not found');
      const pdf = await readPdf(em, id);
      if (!pdf) throw new DomainError('not_found', 'this invoice has no PDF yet: finalize it first');
      return {
        filename: `${inv.display_number}.pdf`,
        content_base64: pdf.content.toString('base64'),
        byte_size: Number(pdf.byte_size),
        sha256: pdf.sha256,
      };
    },
  };
}
