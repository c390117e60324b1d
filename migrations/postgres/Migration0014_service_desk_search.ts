import { Migration } from '@mikro-orm/migrations';

/**
 * A narrow copy of what a summary search counts over: each request's scope (project, organizations, labels) and its
 * lowered key and summary, with their trigram indexes. A search's total cannot come from the trigram index alone
 * (LIKE is always rechecked against the row), so PostgreSQL reads every candidate row: a common word matches a fifth
 * of 100,000 requests, and in sd_requests (~400 bytes a row, the searched columns after 33 others) that is every page
 * of the table. Here a row is ~150 bytes and holds nothing else: about a third of the pages to recheck (the timings:
 * docs/benchmarks.md).
 *
 * Kept by statement triggers on sd_requests in the writing transaction, as sd_request_totals is: exact whatever writes
 * the store. An update rewrites a copy only when what it holds changed, so the sync's upserts of unchanged summaries
 * leave its indexes alone. The pages of a search still come from sd_requests (its own trigram indexes serve a rare
 * word; a common one is found walking the sort order).
 */
export class Migration0014_service_desk_search extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE sd_request_search (
        issue_key text PRIMARY KEY,
        project_key text NOT NULL,
        organization_ids text[] NOT NULL,
        labels text[] NOT NULL,
        search_key text NOT NULL,
        search_summary text NOT NULL
      );
      CREATE INDEX sd_request_search_key ON sd_request_search USING gin (search_key gin_trgm_ops);
      CREATE INDEX sd_request_search_summary ON sd_request_search USING gin (search_summary gin_trgm_ops);
      -- A search too short for a trigram, or a word common in other organizations: the scope narrows first.
      CREATE INDEX sd_request_search_project ON sd_request_search (project_key);

      CREATE FUNCTION sd_request_search_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO sd_request_search (issue_key, project_key, organization_ids, labels, search_key, search_summary)
        SELECT issue_key, project_key, organization_ids, labels, search_key, search_summary FROM new_rows;
        RETURN NULL;
      END
      $fn$;

      CREATE FUNCTION sd_request_search_update() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        -- A key the statement changed (an issue moved to another project) leaves its old copy behind otherwise.
        DELETE FROM sd_request_search s USING old_rows o
        WHERE s.issue_key = o.issue_key AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.issue_key = o.issue_key);
        INSERT INTO sd_request_search AS s (issue_key, project_key, organization_ids, labels, search_key, search_summary)
        SELECT issue_key, project_key, organization_ids, labels, search_key, search_summary FROM new_rows
        ORDER BY issue_key
        ON CONFLICT (issue_key) DO UPDATE SET
          project_key = EXCLUDED.project_key, organization_ids = EXCLUDED.organization_ids, labels = EXCLUDED.labels,
          search_key = EXCLUDED.search_key, search_summary = EXCLUDED.search_summary
        WHERE (s.project_key, s.organization_ids, s.labels, s.search_key, s.search_summary)
              IS DISTINCT FROM (EXCLUDED.project_key, EXCLUDED.organization_ids, EXCLUDED.labels, EXCLUDED.search_key, EXCLUDED.search_summary);
        RETURN NULL;
      END
      $fn$;

      CREATE FUNCTION sd_request_search_delete() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        DELETE FROM sd_request_search s USING old_rows o WHERE s.issue_key = o.issue_key;
        RETURN NULL;
      END
      $fn$;

      CREATE FUNCTION sd_request_search_clear() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        DELETE FROM sd_request_search;
        RETURN NULL;
      END
      $fn$;

      CREATE TRIGGER sd_requests_search_insert AFTER INSERT ON sd_requests
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sd_request_search_insert();
      CREATE TRIGGER sd_requests_search_update AFTER UPDATE ON sd_requests
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sd_request_search_update();
      CREATE TRIGGER sd_requests_search_delete AFTER DELETE ON sd_requests
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sd_request_search_delete();
      CREATE TRIGGER sd_requests_search_truncate AFTER TRUNCATE ON sd_requests
        FOR EACH STATEMENT EXECUTE FUNCTION sd_request_search_clear();

      -- The requests already stored.
      INSERT INTO sd_request_search (issue_key, project_key, organization_ids, labels, search_key, search_summary)
      SELECT issue_key, project_key, organization_ids, labels, search_key, search_summary FROM sd_requests;
    `);
    // Statistics now, not at autovacuum's next pass: without them the counts' plans are guesses.
    this.addSql(`ANALYZE sd_request_search;`);
  }

  override down(): void {
    this.addSql(`
      DROP TRIGGER IF EXISTS sd_requests_search_insert ON sd_requests;
      DROP TRIGGER IF EXISTS sd_requests_search_update ON sd_requests;
      DROP TRIGGER IF EXISTS sd_requests_search_delete ON sd_requests;
      DROP TRIGGER IF EXISTS sd_requests_search_truncate ON sd_requests;
      DROP FUNCTION IF EXISTS sd_request_search_insert();
      DROP FUNCTION IF EXISTS sd_request_search_update();
      DROP FUNCTION IF EXISTS sd_request_search_delete();
      DROP FUNCTION IF EXISTS sd_request_search_clear();
      DROP TABLE IF EXISTS sd_request_search;
    `);
  }
}
