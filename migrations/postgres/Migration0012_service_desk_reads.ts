import { Migration } from '@mikro-orm/migrations';

/**
 * Service desk reads over a large store (the servicedesk bench: 100,000 requests of one organization, asked right after a
 * sync page, when nothing memoized is valid). Each piece removes a per-row cost the reads paid on every such request:
 *
 * - sd_request_totals: request counts and the summary metric's sums per group of requests alike in scope (organizations,
 *   project, labels) and in the exact-match filters (status, category, priority, type). Kept by statement triggers on
 *   sd_requests in the writing transaction, so it is exact whatever writes the store (the sync's upserts, deletes); a
 *   list total or the summary then sums a few groups instead of reading every request.
 * - search_key / search_summary: the issue key and summary lowered once at write time, with trigram indexes. ILIKE in a
 *   UTF-8 database is `lower(text) LIKE lower(pattern)` (PostgreSQL lowers both sides), so matching the lowered
 *   columns with LIKE is the same test without lowering every candidate row again, and the index finds the candidates.
 * - cycle_us / on_time: a resolved request's cycle time (microseconds, never negative) and whether it met its due date
 *   or resolution SLA, the per-row expressions of the delivery metric, computed at write time (they depend only on
 *   the row), with a covering index over resolved requests so the metric reads the index alone.
 */
export class Migration0012_service_desk_reads extends Migration {
  override up(): void {
    this.addSql(`
      CREATE EXTENSION IF NOT EXISTS pg_trgm;

      ALTER TABLE sd_requests
        ADD COLUMN search_key text GENERATED ALWAYS AS (lower(issue_key)) STORED,
        ADD COLUMN search_summary text GENERATED ALWAYS AS (lower(summary)) STORED,
        ADD COLUMN cycle_us bigint GENERATED ALWAYS AS (
          greatest((extract(epoch FROM resolved_at - COALESCE(started_at, created_at)) * 1000000)::bigint, 0)) STORED,
        ADD COLUMN on_time boolean GENERATED ALWAYS AS (
          CASE WHEN due_date IS NOT NULL THEN resolved_at < (due_date + 1)::timestamp AT TIME ZONE 'UTC'
               ELSE resolution_breached IS NOT TRUE END) STORED;

      CREATE INDEX sd_requests_search_key ON sd_requests USING gin (search_key gin_trgm_ops);
      CREATE INDEX sd_requests_search_summary ON sd_requests USING gin (search_summary gin_trgm_ops);
      CREATE INDEX sd_requests_delivery ON sd_requests (project_key, resolved_at) INCLUDE (organization_ids, labels, cycle_us, on_time)
        WHERE resolved_at IS NOT NULL;

      CREATE TABLE sd_request_totals (
        organization_ids text[] NOT NULL,
        project_key text NOT NULL,
        labels text[] NOT NULL,
        status text NOT NULL,
        status_category text NOT NULL,
        priority text,
        issue_type text,
        requests bigint NOT NULL,
        -- Summary metric: requests acknowledged / resolved and the sum of their times since creation (seconds, exact),
        -- requests with an SLA outcome and those that breached none.
        acknowledged bigint NOT NULL,
        acknowledge_seconds numeric NOT NULL,
        resolved bigint NOT NULL,
        resolve_seconds numeric NOT NULL,
        sla_known bigint NOT NULL,
        sla_met bigint NOT NULL,
        -- Project first: the reads' scope condition (project_key = ANY) walks this index.
        UNIQUE NULLS NOT DISTINCT (project_key, organization_ids, labels, status, status_category, priority, issue_type)
      );
      -- Groups a write has just emptied, found without reading the table.
      CREATE INDEX sd_request_totals_empty ON sd_request_totals (project_key) WHERE requests = 0;

      -- Adds the rows a statement wrote and subtracts those it replaced or removed (transition tables new_rows and
      -- old_rows, whichever the operation has). Groups are locked in key order; emptied groups are dropped.
      CREATE FUNCTION sd_request_totals_apply() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        src text := CASE TG_OP
          WHEN 'INSERT' THEN 'SELECT 1 AS sign, * FROM new_rows'
          WHEN 'DELETE' THEN 'SELECT -1 AS sign, * FROM old_rows'
          ELSE 'SELECT 1 AS sign, * FROM new_rows UNION ALL SELECT -1 AS sign, * FROM old_rows' END;
      BEGIN
        EXECUTE format($q$
          INSERT INTO sd_request_totals AS t (organization_ids, project_key, labels, status, status_category, priority, issue_type,
                                              requests, acknowledged, acknowledge_seconds, resolved, resolve_seconds, sla_known, sla_met)
          SELECT organization_ids, project_key, labels, status, status_category, priority, issue_type,
                 sum(sign),
                 sum(sign * (acknowledged_at IS NOT NULL)::int),
                 COALESCE(sum(sign * extract(epoch FROM acknowledged_at - created_at)), 0),
                 sum(sign * (resolved_at IS NOT NULL)::int),
                 COALESCE(sum(sign * extract(epoch FROM resolved_at - created_at)), 0),
                 sum(sign * (first_response_breached IS NOT NULL OR resolution_breached IS NOT NULL)::int),
                 sum(sign * ((first_response_breached IS NOT NULL OR resolution_breached IS NOT NULL)
                             AND first_response_breached IS NOT TRUE AND resolution_breached IS NOT TRUE)::int)
          FROM (%s) d
          GROUP BY organization_ids, project_key, labels, status, status_category, priority, issue_type
          ORDER BY organization_ids, project_key, labels, status, status_category, priority, issue_type
          ON CONFLICT (organization_ids, project_key, labels, status, status_category, priority, issue_type) DO UPDATE SET
            requests = t.requests + EXCLUDED.requests,
            acknowledged = t.acknowledged + EXCLUDED.acknowledged,
            acknowledge_seconds = t.acknowledge_seconds + EXCLUDED.acknowledge_seconds,
            resolved = t.resolved + EXCLUDED.resolved,
            resolve_seconds = t.resolve_seconds + EXCLUDED.resolve_seconds,
            sla_known = t.sla_known + EXCLUDED.sla_known,
            sla_met = t.sla_met + EXCLUDED.sla_met
        $q$, src);
        DELETE FROM sd_request_totals WHERE requests = 0;
        RETURN NULL;
      END
      $fn$;

      CREATE FUNCTION sd_request_totals_clear() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        DELETE FROM sd_request_totals;
        RETURN NULL;
      END
      $fn$;

      CREATE TRIGGER sd_requests_totals_insert AFTER INSERT ON sd_requests
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sd_request_totals_apply();
      CREATE TRIGGER sd_requests_totals_update AFTER UPDATE ON sd_requests
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sd_request_totals_apply();
      CREATE TRIGGER sd_requests_totals_delete AFTER DELETE ON sd_requests
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sd_request_totals_apply();
      CREATE TRIGGER sd_requests_totals_truncate AFTER TRUNCATE ON sd_requests
        FOR EACH STATEMENT EXECUTE FUNCTION sd_request_totals_clear();

      -- The requests already stored.
      INSERT INTO sd_request_totals (organization_ids, project_key, labels, status, status_category, priority, issue_type,
                                     requests, acknowledged, acknowledge_seconds, resolved, resolve_seconds, sla_known, sla_met)
      SELECT organization_ids, project_key, labels, status, status_category, priority, issue_type,
             count(*),
             count(acknowledged_at),
             COALESCE(sum(extract(epoch FROM acknowledged_at - created_at)), 0),
             count(resolved_at),
             COALESCE(sum(extract(epoch FROM resolved_at - created_at)), 0),
             count(*) FILTER (WHERE first_response_breached IS NOT NULL OR resolution_breached IS NOT NULL),
             count(*) FILTER (WHERE (first_response_breached IS NOT NULL OR resolution_breached IS NOT NULL)
                                AND first_response_breached IS NOT TRUE AND resolution_breached IS NOT TRUE)
      FROM sd_requests
      GROUP BY organization_ids, project_key, labels, status, status_category, priority, issue_type;
    `);
  }

  override down(): void {
    this.addSql(`
      DROP TRIGGER IF EXISTS sd_requests_totals_insert ON sd_requests;
      DROP TRIGGER IF EXISTS sd_requests_totals_update ON sd_requests;
      DROP TRIGGER IF EXISTS sd_requests_totals_delete ON sd_requests;
      DROP TRIGGER IF EXISTS sd_requests_totals_truncate ON sd_requests;
      DROP FUNCTION IF EXISTS sd_request_totals_apply();
      DROP FUNCTION IF EXISTS sd_request_totals_clear();
      DROP TABLE IF EXISTS sd_request_totals;
      DROP INDEX IF EXISTS sd_requests_delivery;
      ALTER TABLE sd_requests DROP COLUMN IF EXISTS search_key, DROP COLUMN IF EXISTS search_summary, DROP COLUMN IF EXISTS cycle_us, DROP COLUMN IF EXISTS on_time;
    `);
  }
}
