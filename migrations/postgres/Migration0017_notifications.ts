import { Migration } from '@mikro-orm/migrations';

/**
 * Notifications (docs/api/notifications.md): channels, rules with escalation steps, maintenance windows, the
 * notifications (one open per rule and cause: the partial unique index groups repeats into it), each delivery to a
 * channel with its attempts, and the agent states the rules read. The timeline gains notification rows.
 */
export class Migration0017_notifications extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE notification_channels (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('email', 'chat', 'webhook')),
        name text NOT NULL,
        addresses text[] NOT NULL DEFAULT '{}',
        url text,
        enabled boolean NOT NULL DEFAULT true,
        secret_enc text,
        previous_secret_enc text,
        previous_secret_expires_at timestamptz,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'email') = (url IS NULL)),
        CHECK (kind = 'webhook' OR secret_enc IS NULL)
      );
      CREATE INDEX notification_channels_client ON notification_channels (client_id, created_at);

      CREATE TABLE notification_rules (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid REFERENCES hosts (id) ON DELETE CASCADE,
        name text NOT NULL,
        event text NOT NULL CHECK (event IN ('agent_offline', 'alert', 'deploy_failed')),
        severity text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
        offline_minutes double precision,
        matchers jsonb NOT NULL DEFAULT '[]',
        group_window_minutes double precision NOT NULL DEFAULT 60,
        steps jsonb NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX notification_rules_client_event ON notification_rules (client_id, event);

      CREATE TABLE maintenance_windows (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid REFERENCES hosts (id) ON DELETE CASCADE,
        name text NOT NULL,
        starts_at text NOT NULL,
        timezone text NOT NULL,
        duration_minutes integer NOT NULL CHECK (duration_minutes >= 1),
        rrule text,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX maintenance_windows_client ON maintenance_windows (client_id);

      CREATE TABLE notifications (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        rule_id uuid REFERENCES notification_rules (id) ON DELETE SET NULL,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid REFERENCES hosts (id) ON DELETE CASCADE,
        -- where its first cause sat (an offline agent's host): the maintenance windows that hold it back are those
        place_environment_id uuid,
        place_host_id uuid,
        event text NOT NULL,
        severity text NOT NULL,
        group_key text NOT NULL,
        title text NOT NULL,
        status text NOT NULL CHECK (status IN ('firing', 'resolved')),
        count integer NOT NULL DEFAULT 1,
        step integer NOT NULL DEFAULT 0,
        suppressed boolean NOT NULL DEFAULT false,
        -- the event that last counted: a redelivered event counts once
        last_event_key text,
        first_at timestamptz NOT NULL,
        last_at timestamptz NOT NULL,
        last_sent_at timestamptz,
        resolved_at timestamptz,
        acknowledged_at timestamptz,
        acknowledged_by text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX notifications_open ON notifications (rule_id, group_key) WHERE status = 'firing';
      CREATE INDEX notifications_client_time ON notifications (client_id, first_at DESC);

      -- What a notification stands for: the hosts offline under it, its alert group, the failed deploy; it resolves
      -- once none is active any more.
      CREATE TABLE notification_members (
        notification_id uuid NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
        member text NOT NULL,
        label text NOT NULL,
        active boolean NOT NULL DEFAULT true,
        PRIMARY KEY (notification_id, member)
      );

      CREATE TABLE notification_deliveries (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        channel_id uuid NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
        notification_id uuid REFERENCES notifications (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('firing', 'repeat', 'escalation', 'resolved', 'test')),
        step integer NOT NULL DEFAULT 0,
        -- one delivery per notification, channel and what it says: a job published twice is sent once
        dedupe_key text NOT NULL UNIQUE,
        status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'suppressed')),
        reason text,
        -- what the message says, fixed when the delivery is made, so every attempt sends the same bytes
        payload jsonb NOT NULL,
        redelivered_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        delivered_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX notification_deliveries_channel ON notification_deliveries (channel_id, created_at DESC);
      CREATE INDEX notification_deliveries_notification ON notification_deliveries (notification_id);

      CREATE TABLE notification_attempts (
        id uuid PRIMARY KEY,
        delivery_id uuid NOT NULL REFERENCES notification_deliveries (id) ON DELETE CASCADE,
        at timestamptz NOT NULL,
        status_code integer,
        latency_ms integer NOT NULL,
        error text
      );
      CREATE INDEX notification_attempts_delivery ON notification_attempts (delivery_id, at);

      -- The agent states the rules read, from the fleet's status events (the latest per host wins).
      CREATE TABLE notification_host_states (
        host_id uuid PRIMARY KEY REFERENCES hosts (id) ON DELETE CASCADE,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environments (id) ON DELETE CASCADE,
        hostname text NOT NULL,
        status text NOT NULL CHECK (status IN ('online', 'offline')),
        changed_at timestamptz NOT NULL
      );

      ALTER TABLE timeline_events DROP CONSTRAINT IF EXISTS timeline_events_event_type_check;
      ALTER TABLE timeline_events ADD CONSTRAINT timeline_events_event_type_check
        CHECK (event_type IN ('deploy', 'file_change', 'agent_status', 'alert', 'notification'));
    `);
  }

  override down(): void {
    this.addSql(`
      DELETE FROM timeline_events WHERE event_type = 'notification';
      ALTER TABLE timeline_events DROP CONSTRAINT IF EXISTS timeline_events_event_type_check;
      ALTER TABLE timeline_events ADD CONSTRAINT timeline_events_event_type_check
        CHECK (event_type IN ('deploy', 'file_change', 'agent_status', 'alert'));
      DROP TABLE notification_host_states, notification_attempts, notification_deliveries, notification_members, notifications,
        maintenance_windows, notification_rules, notification_channels;
    `);
  }
}
