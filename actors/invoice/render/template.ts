import Handlebars from 'handlebars';
import { readFileSync } from 'node:fs';
import { invoiceView, type Renderable, type Seller } from './view.ts';

/**
 * The one invoice template (invoice.hbs), shared by the HTML preview and the PDF. It uses `{{…}}` only, never
 * `{{{…}}}`, so handlebars escapes every value (& < > " ' ` =); the view model gives it text, never markup. An isolated
 * handlebars instance with only the built-in helpers: nothing registered elsewhere can change how it renders.
 */
const hbs = Handlebars.create();
const compiled = hbs.compile(readFileSync(new URL('./invoice.hbs', import.meta.url), 'utf8'), {
  knownHelpersOnly: true,
  noEscape: false,
  strict: false,
});

/** The invoice as HTML: the html_override as is when set, otherwise the template. */
export function renderInvoiceHtml(r: Renderable, seller: Seller): string {
  if (r.invoice.html_override !== null) return r.invoice.html_override;
  return compiled(invoiceView(r, seller));
}
