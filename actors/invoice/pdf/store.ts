import type { EntityManager } from '@mikro-orm/postgresql';
import { createHash } from 'node:crypto';
import { sql } from '../invoices/store.ts';

/** The PDF table (Migration0004_invoice_pdfs): one PDF per invoice, in PostgreSQL with the invoice it shows. */

export async function savePdf(
  tx: EntityManager,
  invoiceId: string,
  version: number,
  pdf: Buffer,
  editor: string,
): Promise<{ sha256: string; byte_size: number }> {
  const sha256 = createHash('sha256').update(pdf).digest('hex');
  await sql(
    tx,
    `INSERT INTO invoice_pdfs (invoice_id, invoice_version, content, byte_size, sha256, created_by) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (invoice_id) DO UPDATE SET invoice_version = EXCLUDED.invoice_version, content = EXCLUDED.content, byte_size = EXCLUDED.byte_size,
       sha256 = EXCLUDED.sha256, created_by = EXCLUDED.created_by, created_at = now()`,
    [invoiceId, version, pdf, pdf.length, sha256, editor],
  );
  return { sha256, byte_size: pdf.length };
}

export async function readPdf(
  em: EntityManager,
  invoiceId: string,
): Promise<{ content: Buffer; sha256: string; byte_size: number } | undefined> {
  const [row] = await sql<{ content: Buffer; sha256: string; byte_size: number }>(
    em,
    `SELECT content, sha256, byte_size FROM invoice_pdfs WHERE invoice_id = ?`,
    [invoiceId],
  );
  return row;
}

export const deletePdf = (tx: EntityManager, invoiceId: string): Promise<unknown> =>
  sql(tx, `DELETE FROM invoice_pdfs WHERE invoice_id = ?`, [invoiceId]);
