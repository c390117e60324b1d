import { z } from 'zod';
import { subjects } from '../subject.ts';
import { Invoice } from './invoice.ts';

/** Invoice documents and their lifecycle (docs/api/invoicing.md): HTML preview, finalize with its PDF, regenerate. */

const ById = z.object({ id: z.uuid() });

/** The stored PDF. Binary over NATS: base64 in the reply (the gateway writes the bytes); its size is bounded by NATS max_payload. */
export const InvoicePdf = z.object({
  filename: z.string(),
  // Produced by the invoice domain itself: not re-validated character by character (a large PDF would cost a regex pass).
  content_base64: z.string().min(1),
  byte_size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type InvoicePdf = z.infer<typeof InvoicePdf>;

export const invoiceDocumentSubjects = subjects({
  'svc.invoice.preview_html': {
    retry: 'safe',
    summary: 'The invoice as HTML: its html_override as is when set, else the template (invoices:read).',
    request: ById,
    reply: z.object({ html: z.string() }),
    errors: ['forbidden', 'not_found'],
  },
  'svc.invoice.finalize': {
    summary: 'Renders and stores the PDF of a draft and moves it to needs_review (invoices:write).',
    request: ById,
    reply: Invoice,
    errors: ['bad_request', 'forbidden', 'not_found', 'conflict', 'internal_error', 'unavailable'],
  },
  'svc.invoice.pdf': {
    retry: 'safe',
    summary: 'The stored PDF of a finalized invoice (invoices:read); not_found before finalize.',
    request: ById,
    reply: InvoicePdf,
    errors: ['forbidden', 'not_found'],
  },
  'svc.invoice.regenerate': {
    summary:
      'Rebuilds the automatic lines of a declined, rejected or approved invoice from fresh analytics data; back to draft (invoices:write).',
    request: ById,
    reply: Invoice,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
});
