import { Migration } from '@mikro-orm/migrations';

/**
 * Invoicing (docs/api/invoicing.md#invoices-postgresql): invoices, their line items and edit history, owned by the
 * invoice domain. Money, hours and multipliers are `numeric` (never float): amounts to cents, hours and quantities to 4
 * decimals, unit prices to 6. `display_number` comes from `invoice_counters`, incremented in the invoice's own
 * transaction, so numbers are unique and have no gaps (a rolled-back generate rolls its number back too).
 */
export class Migration0003_invoicing extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE invoice_counters (
        name text PRIMARY KEY,
        value bigint NOT NULL CHECK (value >= 0)
      );
      INSERT INTO invoice_counters (name, value) VALUES ('invoice', 0);

      CREATE TABLE invoices (
        id uuid PRIMARY KEY,
        number bigint NOT NULL UNIQUE,
        display_number text NOT NULL UNIQUE,
        application_key text NOT NULL,
        customer_key text NOT NULL,
        period_start date NOT NULL,
        period_end date NOT NULL,
        deal_type text NOT NULL,
        currency text NOT NULL,
        base_amount numeric(15, 2) NOT NULL,
        overtime_hours numeric(16, 4) NOT NULL,
        overtime_amount numeric(15, 2) NOT NULL,
        total_amount numeric(15, 2) NOT NULL,
        total_hours numeric(16, 4) NOT NULL,
        is_overtime boolean NOT NULL,
        status text NOT NULL CHECK (status IN ('draft', 'needs_review', 'declined', 'rejected', 'approved', 'sent')),
        version integer NOT NULL DEFAULT 1,
        invoice_date date NOT NULL,
        show_task_list boolean NOT NULL DEFAULT true,
        show_tracked_time boolean NOT NULL DEFAULT true,
        show_task_pricing boolean NOT NULL DEFAULT true,
        show_overtime boolean NOT NULL DEFAULT true,
        legal_text text NOT NULL DEFAULT '',
        html_override text,
        -- What the analytics store said about the customer and application at generation: the rendered invoice must
        -- not change when the analytics data does (only regenerate refreshes it).
        customer_snapshot jsonb NOT NULL,
        application_snapshot jsonb NOT NULL,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (period_start <= period_end)
      );
      CREATE INDEX invoices_period_idx ON invoices (application_key, period_start, period_end);
      CREATE INDEX invoices_status_idx ON invoices (status, number DESC);

      CREATE TABLE invoice_line_items (
        id uuid PRIMARY KEY,
        invoice_id uuid NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
        line_type text NOT NULL,
        description text NOT NULL,
        tracker_key text,
        time_seconds integer NOT NULL DEFAULT 0 CHECK (time_seconds >= 0),
        billable_seconds integer NOT NULL DEFAULT 0 CHECK (billable_seconds >= 0),
        unit_price numeric(19, 6) NOT NULL,
        quantity numeric(16, 4) NOT NULL,
        line_total numeric(15, 2) NOT NULL,
        rate_tier text,
        rate_multiplier numeric(8, 4) NOT NULL DEFAULT 1,
        source text NOT NULL CHECK (source IN ('analytics', 'manual')),
        is_auto_generated boolean NOT NULL,
        sort_order integer NOT NULL,
        linked_issue_key text,
        worklog_date date,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX invoice_line_items_invoice_idx ON invoice_line_items (invoice_id, sort_order);

      -- One row per changed field or line. line_item_id has no foreign key: a removed line keeps its history.
      CREATE TABLE invoice_edit_history (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL,
        invoice_id uuid NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
        line_item_id uuid,
        edit_type text NOT NULL,
        field_name text,
        old_value text,
        new_value text,
        edited_by text NOT NULL,
        edited_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX invoice_edit_history_invoice_idx ON invoice_edit_history (invoice_id, seq);
    `);
  }
}
