import { Migration } from '@mikro-orm/migrations';

/**
 * The PDF of a finalized invoice, kept in PostgreSQL with the invoice (one durable store, one backup, the same
 * transaction as the status move: a finalize that fails leaves neither a PDF nor a moved status). One row per invoice:
 * finalize writes it, regenerate deletes it (the draft no longer matches it). `version` is the invoice version the PDF
 * shows.
 */
export class Migration0004_invoice_pdfs extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE invoice_pdfs (
        invoice_id uuid PRIMARY KEY REFERENCES invoices (id) ON DELETE CASCADE,
        invoice_version integer NOT NULL,
        content bytea NOT NULL,
        byte_size integer NOT NULL CHECK (byte_size > 0),
        sha256 text NOT NULL,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `);
  }
}
