import { Migration } from '@mikro-orm/migrations';

/**
 * Events: receivers of external events, the deploys and alert groups they record, deliveries that could not
 * be used, voice calls that page on-call numbers, the event timeline and notes on charts.
 *
 * Rows hang on the fleet's clients, environments and hosts by foreign key (deleting a client or an environment takes its
 * events along); the events domain never reads those tables, it asks the fleet (svc.fleet.lookup.*).
 * Notes carry `span`, the closed range [timestamp, ends_at or timestamp]: a point is a range of one instant, so "point
 * notes inside the range and range notes overlapping it" is one overlap test, answered by GiST indexes per scope.
 */
export class Migration0010_events extends Migration {
  override up(): void {
    this.addSql(`
      CREATE EXTENSION IF NOT EXISTS btree_gist;

      -- Webhook endpoints (kind 'webhook': github, gitlab, argocd) and alert sources (kind 'alert': alertmanager).
      CREATE TABLE event_receivers (
        id uuid PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('webhook', 'alert')),
        source text NOT NULL CHECK (source IN ('github', 'gitlab', 'argocd', 'alertmanager')),
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        name text NOT NULL,
        token_hash text NOT NULL UNIQUE,
        token_prefix text NOT NULL,
        secret_enc text,
        oncall_phone text,
        created_by uuid,
        last_delivery_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'alert') = (source = 'alertmanager')),
        CHECK (kind = 'alert' OR oncall_phone IS NULL)
      );
      CREATE INDEX event_receivers_client ON event_receivers (client_id, kind, created_at);

      CREATE TABLE deploys (
        id uuid PRIMARY KEY,
        receiver_id uuid REFERENCES event_receivers (id) ON DELETE SET NULL,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        source text NOT NULL,
        event_type text NOT NULL,
        summary text NOT NULL,
        app text NOT NULL,
        revision text NOT NULL,
        url text,
        failed boolean NOT NULL DEFAULT false,
        at timestamptz NOT NULL,
        -- receiver id and the sender's delivery id: a repeated delivery is stored once
        dedupe_key text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX deploys_client_at ON deploys (client_id, at);
      CREATE INDEX deploys_environment_at ON deploys (environment_id, at);

      CREATE TABLE alert_groups (
        id uuid PRIMARY KEY,
        receiver_id uuid REFERENCES event_receivers (id) ON DELETE SET NULL,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid REFERENCES hosts (id) ON DELETE SET NULL,
        group_key text NOT NULL,
        name text NOT NULL,
        severity text NOT NULL,
        status text NOT NULL CHECK (status IN ('firing', 'resolved')),
        fired_at timestamptz NOT NULL,
        resolved_at timestamptz,
        acknowledged_at timestamptz,
        acknowledged_by text,
        alerts jsonb NOT NULL DEFAULT '[]',
        external_url text,
        last_notified_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX alert_groups_key ON alert_groups (receiver_id, group_key, fired_at DESC);
      CREATE INDEX alert_groups_client_fired ON alert_groups (client_id, fired_at);
      CREATE INDEX alert_groups_environment_fired ON alert_groups (environment_id, fired_at);
      CREATE INDEX alert_groups_host_fired ON alert_groups (host_id, fired_at);

      CREATE TABLE rejected_deliveries (
        id uuid PRIMARY KEY,
        receiver_id uuid NOT NULL REFERENCES event_receivers (id) ON DELETE CASCADE,
        source text NOT NULL,
        event text NOT NULL,
        reason text NOT NULL,
        external_id text NOT NULL,
        headers jsonb NOT NULL DEFAULT '{}',
        body_excerpt text NOT NULL DEFAULT '',
        received_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX rejected_deliveries_receiver ON rejected_deliveries (receiver_id, received_at DESC);

      -- One row per call placed (attempt n of an alert group's page); the provider's call SID once it answered.
      CREATE TABLE voice_calls (
        id uuid PRIMARY KEY,
        alert_group_id uuid NOT NULL REFERENCES alert_groups (id) ON DELETE CASCADE,
        attempt integer NOT NULL CHECK (attempt >= 1),
        to_number text NOT NULL,
        provider_sid text UNIQUE,
        status text NOT NULL DEFAULT 'placing',
        digits text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (alert_group_id, attempt)
      );

      CREATE TABLE timeline_events (
        id uuid PRIMARY KEY,
        -- what the row was made from (deploy id, event message id…): a redelivered event is stored once
        source_key text NOT NULL UNIQUE,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid REFERENCES hosts (id) ON DELETE CASCADE,
        event_type text NOT NULL CHECK (event_type IN ('deploy', 'file_change', 'agent_status', 'alert')),
        "timestamp" timestamptz NOT NULL,
        title text NOT NULL,
        description text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX timeline_client_time ON timeline_events (client_id, "timestamp" DESC);
      CREATE INDEX timeline_environment_time ON timeline_events (environment_id, "timestamp" DESC);
      CREATE INDEX timeline_host_time ON timeline_events (host_id, "timestamp" DESC);
      -- the unfiltered timeline of a caller holding many clients (or all: super admins) walks time itself
      CREATE INDEX timeline_time ON timeline_events ("timestamp" DESC);

      CREATE TABLE annotations (
        id uuid PRIMARY KEY,
        scope text NOT NULL CHECK (scope IN ('host', 'environment', 'client')),
        kind text NOT NULL CHECK (kind IN ('note', 'maintenance', 'deploy')),
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid REFERENCES hosts (id) ON DELETE CASCADE,
        "timestamp" timestamptz NOT NULL,
        ends_at timestamptz,
        span tstzrange GENERATED ALWAYS AS (tstzrange("timestamp", coalesce(ends_at, "timestamp"), '[]')) STORED,
        text text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 500),
        created_by uuid NOT NULL,
        created_by_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (ends_at IS NULL OR ends_at > "timestamp"),
        CHECK (
          (scope = 'host' AND host_id IS NOT NULL AND environment_id IS NOT NULL)
          OR (scope = 'environment' AND host_id IS NULL AND environment_id IS NOT NULL)
          OR (scope = 'client' AND host_id IS NULL AND environment_id IS NULL)
        )
      );
      CREATE INDEX annotations_host_span ON annotations USING gist (host_id, span) WHERE scope = 'host';
      CREATE INDEX annotations_environment_span ON annotations USING gist (environment_id, span) WHERE scope = 'environment';
      CREATE INDEX annotations_client_span ON annotations USING gist (client_id, span) WHERE scope = 'client';
      -- environment and client charts also take the notes of every host below them
      CREATE INDEX annotations_env_hosts_span ON annotations USING gist (environment_id, span) WHERE scope = 'host';
      CREATE INDEX annotations_client_all_span ON annotations USING gist (client_id, span);
    `);
  }

  override down(): void {
    this.addSql(`
      DROP TABLE IF EXISTS annotations;
      DROP TABLE IF EXISTS timeline_events;
      DROP TABLE IF EXISTS voice_calls;
      DROP TABLE IF EXISTS rejected_deliveries;
      DROP TABLE IF EXISTS alert_groups;
      DROP TABLE IF EXISTS deploys;
      DROP TABLE IF EXISTS event_receivers;
    `);
  }
}
