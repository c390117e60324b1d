import { Migration } from '@mikro-orm/migrations';

/**
 * Service desk (docs/api/service-desk.md), owned by the servicedesk domain:
 * - sd_mappings: which client sees which tracker organization (and, within it, which service desks, projects, labels);
 * - sd_requests + sd_status_history: the read store, a local copy of the mapped organizations' requests that every
 *   list, board, metric and export reads (never the tracker); derived columns (started/acknowledged times, SLA
 *   outcomes) are computed once at sync time so the metrics are plain aggregates;
 * - sd_sync_state: per organization, how far the sync got (resumable after a crash);
 * - sd_pending: writes made through this service that the store has not caught up with yet (merged into reads);
 * - sd_actions: the log of writes made through this service, per request.
 */
export class Migration0011_service_desk extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE sd_mappings (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        organization_id text NOT NULL CHECK (organization_id ~ '^[0-9]{1,18}$'),
        organization_name text NOT NULL DEFAULT '',
        service_desk_ids text[] NOT NULL CHECK (cardinality(service_desk_ids) >= 1),
        project_keys text[] NOT NULL DEFAULT '{}',
        labels text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (client_id, organization_id)
      );
      CREATE INDEX sd_mappings_organization ON sd_mappings (organization_id);

      CREATE TABLE sd_requests (
        issue_key text PRIMARY KEY,
        issue_id text NOT NULL,
        project_key text NOT NULL,
        issue_number integer NOT NULL,
        service_desk_id text,
        request_type_id text,
        request_type text,
        summary text NOT NULL DEFAULT '',
        status text NOT NULL,
        status_category text NOT NULL CHECK (status_category IN ('new', 'indeterminate', 'done')),
        priority text,
        priority_rank smallint NOT NULL DEFAULT 0,
        issue_type text,
        assignee text,
        assignee_email text,
        reporter_name text,
        reporter_email text,
        organization_ids text[] NOT NULL DEFAULT '{}',
        labels text[] NOT NULL DEFAULT '{}',
        linked_issue_key text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        resolved_at timestamptz,
        due_date date,
        started_at timestamptz,
        acknowledged_at timestamptz,
        first_response_ms bigint,
        first_response_breached boolean,
        resolution_ms bigint,
        resolution_breached boolean,
        resolution_sla_status text NOT NULL DEFAULT 'none',
        sla jsonb NOT NULL DEFAULT '[]',
        synced_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX sd_requests_organizations ON sd_requests USING gin (organization_ids);
      CREATE INDEX sd_requests_updated ON sd_requests (updated_at, issue_key);
      CREATE INDEX sd_requests_created ON sd_requests (created_at, issue_key);
      CREATE INDEX sd_requests_resolved ON sd_requests (resolved_at) WHERE resolved_at IS NOT NULL;
      CREATE INDEX sd_requests_linked ON sd_requests (linked_issue_key) WHERE linked_issue_key IS NOT NULL;
      CREATE INDEX sd_requests_reporter ON sd_requests (lower(reporter_email));
      -- Sort orders of the tickets list (a page walks the index instead of sorting the organization's requests).
      CREATE INDEX sd_requests_priority ON sd_requests (priority_rank, updated_at, issue_key);
      CREATE INDEX sd_requests_status_sort ON sd_requests (lower(status), issue_key);
      CREATE INDEX sd_requests_key_sort ON sd_requests (project_key, issue_number);
      CREATE INDEX sd_requests_summary_sort ON sd_requests (lower(summary), issue_key);
      CREATE INDEX sd_requests_assignee_sort ON sd_requests (lower(assignee), issue_key);
      -- Counts and metrics read only this (index-only scans): the scope columns, the common filters and what the
      -- metrics aggregate, without the wide rows.
      CREATE INDEX sd_requests_scan ON sd_requests (project_key, status, priority)
        INCLUDE (organization_ids, labels, status_category, issue_type, created_at, updated_at, resolved_at, acknowledged_at, started_at, due_date,
                 first_response_ms, first_response_breached, resolution_breached, resolution_sla_status);

      CREATE TABLE sd_status_history (
        issue_key text NOT NULL REFERENCES sd_requests (issue_key) ON DELETE CASCADE,
        seq integer NOT NULL,
        from_status text,
        to_status text NOT NULL,
        changed_at timestamptz NOT NULL,
        PRIMARY KEY (issue_key, seq)
      );

      CREATE TABLE sd_sync_state (
        organization_id text PRIMARY KEY,
        watermark timestamptz,
        full_load_completed_at timestamptz,
        last_run_at timestamptz,
        last_success_at timestamptz,
        last_error text,
        requests_synced bigint NOT NULL DEFAULT 0
      );

      CREATE TABLE sd_pending (
        id uuid PRIMARY KEY,
        issue_key text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('create', 'transition')),
        organization_id text NOT NULL,
        status text NOT NULL,
        status_category text NOT NULL CHECK (status_category IN ('new', 'indeterminate', 'done')),
        effective_at timestamptz NOT NULL,
        fields jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX sd_pending_issue ON sd_pending (issue_key, effective_at DESC);

      CREATE TABLE sd_actions (
        id uuid PRIMARY KEY,
        issue_key text NOT NULL,
        action text NOT NULL,
        actor_id uuid,
        actor_email text,
        details jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX sd_actions_issue ON sd_actions (issue_key, created_at DESC);
    `);
  }

  override down(): void {
    this.addSql(
      `DROP TABLE IF EXISTS sd_actions, sd_pending, sd_sync_state, sd_status_history, sd_requests, sd_mappings`,
    );
  }
}
