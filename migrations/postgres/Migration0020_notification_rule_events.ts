import { Migration } from '@mikro-orm/migrations';

/**
 * Rules for three more events: a service-desk request's SLA (breached, or about to be), an invoice's review, chosen
 * audit actions; and the SLA state notifications last saw per request, which a delayed "about to breach" look reads.
 */
export class Migration0020_notification_rule_events extends Migration {
  override up(): void {
    this.addSql(`
      ALTER TABLE notification_rules DROP CONSTRAINT IF EXISTS notification_rules_event_check;
      ALTER TABLE notification_rules ADD CONSTRAINT notification_rules_event_check
        CHECK (event IN ('agent_offline', 'alert', 'deploy_failed', 'sla_breach', 'invoice_review', 'audit'));
      ALTER TABLE notification_rules ADD COLUMN sla_warn_minutes double precision;
      ALTER TABLE notification_rules ADD COLUMN audit_actions text[] NOT NULL DEFAULT '{}';
      ALTER TABLE notification_rules ADD COLUMN audit_global boolean NOT NULL DEFAULT false;
      -- Every audit entry is looked up against these.
      CREATE INDEX notification_rules_audit ON notification_rules USING gin (audit_actions) WHERE event = 'audit';

      CREATE TABLE notification_sla_states (
        issue_key text NOT NULL,
        metric text NOT NULL CHECK (metric IN ('first_response', 'resolution')),
        summary text NOT NULL,
        client_ids uuid[] NOT NULL,
        state text NOT NULL CHECK (state IN ('ongoing', 'paused', 'breached', 'met')),
        breach_at timestamptz,
        changed_at timestamptz NOT NULL,
        PRIMARY KEY (issue_key, metric)
      );
    `);
  }

  override down(): void {
    this.addSql(`
      DROP TABLE notification_sla_states;
      DELETE FROM notification_rules WHERE event IN ('sla_breach', 'invoice_review', 'audit');
      ALTER TABLE notification_rules DROP COLUMN audit_global;
      ALTER TABLE notification_rules DROP COLUMN audit_actions;
      ALTER TABLE notification_rules DROP COLUMN sla_warn_minutes;
      ALTER TABLE notification_rules DROP CONSTRAINT notification_rules_event_check;
      ALTER TABLE notification_rules ADD CONSTRAINT notification_rules_event_check
        CHECK (event IN ('agent_offline', 'alert', 'deploy_failed'));
    `);
  }
}
