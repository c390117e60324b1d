import type { EntityManager } from '@mikro-orm/postgresql';
import type { Invoice } from '../../../contracts/domains/invoice.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Logger } from '../../../platform/logger.ts';
import { recordHistory } from '../invoices/history.ts';
import { publishReviewMove, type MoveDeps } from '../invoices/review-event.ts';
import { loadInvoice, loadRenderable, sql } from '../invoices/store.ts';
import { PdfContentError, PdfRendererUnavailableError, type PdfRenderer } from '../pdf/browser.ts';
import { savePdf } from '../pdf/store.ts';
import { renderInvoiceHtml } from '../render/template.ts';
import type { Seller } from '../render/view.ts';

/**
 * finalize: draft → needs_review with its PDF, all in one transaction that holds the invoice row (FOR UPDATE) while
 * Chromium prints. So two finalizes at once queue on the lock: the first renders, stores and commits; the second then
 * finds needs_review and answers 409 — one PDF. A render failure rolls everything back (the invoice stays a draft):
 * 400 when the HTML broke its page, 503 when the browser died under the render and its retry, 500 otherwise; a crash
 * mid-way does the same, so no durable work queue is needed. The
 * PDF is printed from exactly what preview-html shows (the template, or the html_override when set), at the version
 * the finalize produces, so the document shows no "Draft" mark. The move is announced (svc.evt.invoice.review) before
 * the commit; a publish that fails rolls it back like a failed render.
 */
export async function finalize(
  tx: EntityManager,
  id: string,
  deps: MoveDeps & { renderer: PdfRenderer; seller: Seller; log: Logger; timeoutMs: number },
): Promise<Invoice> {
  const doc = await loadRenderable(tx, id, true);
  const inv = doc.invoice;
  if (inv.status !== 'draft')
    throw new DomainError('conflict', `only a draft can be finalized; this invoice is ${inv.status}`);
  const html = renderInvoiceHtml({ ...doc, invoice: { ...inv, status: 'needs_review' } }, deps.seller);
  let pdf: Buffer;
  try {
    pdf = await deps.renderer.render(html, deps.timeoutMs);
  } catch (err) {
    deps.log.error({ err, invoice_id: id }, 'PDF rendering failed; the invoice stays a draft');
    // The invoice's own HTML broke its page: the caller can fix it (the html_override). A browser that died twice is
    // the service's, and passes.
    if (err instanceof PdfContentError)
      throw new DomainError('bad_request', `the invoice's HTML could not be printed: ${err.message}`);
    if (err instanceof PdfRendererUnavailableError) throw new DomainError('unavailable', err.message);
    throw new DomainError('internal_error', 'PDF generation failed');
  }
  const version = inv.version + 1;
  const stored = await savePdf(tx, id, version, pdf, deps.editor);
  await sql(tx, `UPDATE invoices SET status = 'needs_review', version = ?, updated_at = now() WHERE id = ?`, [
    version,
    id,
  ]);
  await recordHistory(tx, id, deps.editor, [
    { edit_type: 'status_change', field_name: 'status', old_value: 'draft', new_value: 'needs_review' },
    { edit_type: 'pdf_rendered', field_name: 'pdf', new_value: `sha256:${stored.sha256} bytes:${stored.byte_size}` },
  ]);
  const after = await loadInvoice(tx, id);
  await publishReviewMove(deps, after, { status: 'needs_review', previous: inv.status, comment: null });
  return after;
}
