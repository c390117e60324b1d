import type { MikroORM } from '@mikro-orm/postgresql';
import { requirePermission } from '../../../contracts/access.ts';
import type { Cat } from '../../../contracts/catalogue.ts';
import type { Config } from '../../runtime/config.ts';
import type { Handlers } from '../../runtime/serve.ts';
import { READ } from '../invoices/handlers.ts';
import { loadRenderable } from '../invoices/store.ts';
import { renderInvoiceHtml } from '../render/template.ts';
import type { Seller } from '../render/view.ts';

export interface DocumentDeps {
  orm: MikroORM;
  seller: Seller;
}

export const sellerOf = (c: Config): Seller => ({ name: c.SVC_INVOICE_SELLER_NAME, address: c.SVC_INVOICE_SELLER_ADDRESS, email: c.SVC_INVOICE_SELLER_EMAIL, vat_id: c.SVC_INVOICE_SELLER_VAT_ID });

/** Invoice documents: the HTML preview. */
export function documentHandlers(deps: DocumentDeps): Handlers<Cat, 'invoice'> {
  return {
    'svc.invoice.preview_html': async ({ id }, { ctx }) => {
      requirePermission(ctx, READ);
      return { html: renderInvoiceHtml(await loadRenderable(deps.orm.em.fork(), id), deps.seller) };
    },

  };
}
