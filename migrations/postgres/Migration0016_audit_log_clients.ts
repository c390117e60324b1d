import { Migration } from '@mikro-orm/migrations';

const UUID = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;

/**
 * Existing rows get the clients their own columns name: a client's id for client entries, `client_id` in the details
 * (environments, hosts, agents, install tokens, assignments, team links, receivers, mappings), a note's and a mapping's
 * before/after `client_id`, a deleted team's `client_ids`, a service account's scope (created, or a scope change). An
 * entry that says nothing of its clients (a team or key change without them, a login) stays without: super admins
 * only, never wider than it should be. A scope of `*` is every client: left without too. Only rows naming no client
 * yet are touched, so running it again changes nothing (exported for its test).
 */
export const BACKFILL_AUDIT_CLIENTS = `
  UPDATE audit_log a SET client_ids = d.ids
    FROM (
      SELECT id, array_agg(DISTINCT CASE WHEN c ~ ${UUID} THEN c::uuid END) FILTER (WHERE c ~ ${UUID}) AS ids
        FROM (
          SELECT id, resource_id AS c FROM audit_log WHERE resource_type = 'client'
          UNION ALL SELECT id, details->>'client_id' FROM audit_log
          UNION ALL SELECT id, details->'note'->>'client_id' FROM audit_log
          UNION ALL SELECT id, details->'before'->>'client_id' FROM audit_log
          UNION ALL SELECT id, details->'after'->>'client_id' FROM audit_log
          UNION ALL SELECT id, jsonb_array_elements_text(details->'client_ids') FROM audit_log
            WHERE jsonb_typeof(details->'client_ids') = 'array'
          UNION ALL SELECT id, jsonb_array_elements_text(details->'client_scope') FROM audit_log
            WHERE action = 'service_account.created' AND jsonb_typeof(details->'client_scope') = 'array'
          UNION ALL SELECT id, jsonb_array_elements_text(details->'changes'->'client_scope'->'from') FROM audit_log
            WHERE action = 'service_account.updated' AND jsonb_typeof(details->'changes'->'client_scope'->'from') = 'array'
          UNION ALL SELECT id, jsonb_array_elements_text(details->'changes'->'client_scope'->'to') FROM audit_log
            WHERE action = 'service_account.updated' AND jsonb_typeof(details->'changes'->'client_scope'->'to') = 'array'
        ) named
       WHERE c IS NOT NULL
       GROUP BY id
      HAVING bool_or(c ~ ${UUID}) AND NOT bool_or(c = '*')
    ) d
   WHERE a.id = d.id AND a.client_ids = '{}'`;

/**
 * The clients each audit entry concerns, so the audit log shows a caller only its clients' entries (audit:read on every
 * client an entry names; entries naming none only to super admins and all-client holders), filtered in SQL so paging
 * totals count only what the caller sees. The GIN index serves the `client_ids <@ <caller's clients>` test.
 */
export class Migration0016_audit_log_clients extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE audit_log ADD COLUMN client_ids uuid[] NOT NULL DEFAULT '{}';`);
    this.addSql(`${BACKFILL_AUDIT_CLIENTS};`);
    this.addSql(`CREATE INDEX audit_log_client_ids_idx ON audit_log USING gin (client_ids);`);
  }

  override down(): void {
    this.addSql(`DROP INDEX IF EXISTS audit_log_client_ids_idx;`);
    this.addSql(`ALTER TABLE audit_log DROP COLUMN IF EXISTS client_ids;`);
  }
}
