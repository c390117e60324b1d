import { Migration } from '@mikro-orm/migrations';

/**
 * Identity and access (docs/api/identity.md) and the clients table the access model hangs on (owned by the fleet
 * domain). Secrets are stored only as hashes (tokens, keys) or encrypted (TOTP secrets).
 */
export class Migration0002_identity extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE clients (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        slug text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email text NOT NULL,
        display_name text NOT NULL,
        status text NOT NULL CHECK (status IN ('invited', 'active', 'disabled')),
        is_super_admin boolean NOT NULL DEFAULT false,
        password_hash text,
        mfa_enabled boolean NOT NULL DEFAULT false,
        mfa_secret_enc text,
        mfa_last_used_step bigint,
        auth_provider text,
        auth_provider_id text,
        last_login_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX users_email_key ON users (lower(email));
      CREATE UNIQUE INDEX users_provider_key ON users (auth_provider, auth_provider_id) WHERE auth_provider_id IS NOT NULL;

      CREATE TABLE password_history (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        password_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX password_history_user_idx ON password_history (user_id, created_at DESC);

      CREATE TABLE mfa_recovery_codes (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        code_hash text NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX mfa_recovery_codes_user_idx ON mfa_recovery_codes (user_id);

      CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        ip_address text,
        user_agent text,
        device_label text,
        is_revoked boolean NOT NULL DEFAULT false,
        revoked_at timestamptz,
        revoked_reason text,
        last_active_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX sessions_user_idx ON sessions (user_id) WHERE NOT is_revoked;

      -- Every refresh token a session has had: a rotated one presented again reveals a replay.
      CREATE TABLE refresh_tokens (
        token_hash text PRIMARY KEY,
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        rotated_at timestamptz
      );
      CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id);

      CREATE TABLE one_time_tokens (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        purpose text NOT NULL CHECK (purpose IN ('reset', 'invite')),
        token_hash text NOT NULL UNIQUE,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX one_time_tokens_user_idx ON one_time_tokens (user_id, purpose) WHERE used_at IS NULL;

      CREATE TABLE roles (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        permissions text[] NOT NULL DEFAULT '{}',
        is_system boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX roles_name_key ON roles (lower(name));

      CREATE TABLE teams (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX teams_name_key ON teams (lower(name));

      CREATE TABLE team_members (
        team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        role_id uuid NOT NULL REFERENCES roles (id) ON DELETE RESTRICT,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, user_id)
      );
      CREATE INDEX team_members_user_idx ON team_members (user_id);
      CREATE INDEX team_members_role_idx ON team_members (role_id);

      CREATE TABLE team_clients (
        team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team_id, client_id)
      );
      CREATE INDEX team_clients_client_idx ON team_clients (client_id);

      CREATE TABLE user_client_roles (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        role_id uuid NOT NULL REFERENCES roles (id) ON DELETE RESTRICT,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, client_id)
      );
      CREATE INDEX user_client_roles_client_idx ON user_client_roles (client_id);
      CREATE INDEX user_client_roles_role_idx ON user_client_roles (role_id);

      CREATE TABLE service_accounts (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        role_id uuid NOT NULL REFERENCES roles (id) ON DELETE RESTRICT,
        client_scope text[] NOT NULL,
        expires_at timestamptz,
        is_active boolean NOT NULL DEFAULT true,
        api_key_hash text NOT NULL UNIQUE,
        api_key_prefix text NOT NULL,
        created_by uuid,
        last_used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE audit_log (
        id uuid PRIMARY KEY,
        actor_id uuid,
        actor_email text,
        actor_type text NOT NULL DEFAULT 'user',
        action text NOT NULL,
        resource_type text NOT NULL,
        resource_id text,
        details jsonb NOT NULL DEFAULT '{}',
        ip_address text,
        user_agent text,
        request_id text,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX audit_log_created_idx ON audit_log (created_at DESC, id DESC);
      CREATE INDEX audit_log_actor_idx ON audit_log (actor_id, created_at DESC);
      CREATE INDEX audit_log_action_idx ON audit_log (action, created_at DESC);
      CREATE INDEX audit_log_resource_idx ON audit_log (resource_type, resource_id, created_at DESC);
    `);
  }

  override down(): void {
    this
      .addSql(`DROP TABLE IF EXISTS audit_log, service_accounts, user_client_roles, team_clients, team_members, teams, roles,
      one_time_tokens, refresh_tokens, sessions, mfa_recovery_codes, password_history, users, clients CASCADE;`);
  }
}
