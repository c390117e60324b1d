import { Migration } from '@mikro-orm/migrations';

/**
 * Fleet (environments, hosts, agents, inventory, integrations, watch config: docs/api/fleet.md), owned by the
 * fleet domain. Every host row carries its client_id (copied from its environment) so each scoped read filters on
 * one indexed column. Inventory tables hold the latest snapshot only: a snapshot replaces them in one transaction.
 */
export class Migration0006_fleet extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE environments (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        name text NOT NULL,
        slug text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (client_id, slug)
      );

      CREATE TABLE hosts (
        id uuid PRIMARY KEY,
        environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        agent_id uuid UNIQUE,
        hostname text NOT NULL,
        ip_address text NOT NULL DEFAULT '',
        os text NOT NULL DEFAULT '',
        os_version text NOT NULL DEFAULT '',
        kernel_version text NOT NULL DEFAULT '',
        arch text NOT NULL DEFAULT '',
        cpu_cores integer NOT NULL DEFAULT 0 CHECK (cpu_cores >= 0),
        memory_total_bytes bigint NOT NULL DEFAULT 0 CHECK (memory_total_bytes >= 0),
        agent_status text NOT NULL DEFAULT 'offline' CHECK (agent_status IN ('online', 'offline')),
        agent_version text NOT NULL DEFAULT '',
        last_seen_at timestamptz,
        tags jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(tags) = 'object'),
        labels jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
        inventory_collected_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX hosts_environment_idx ON hosts (environment_id, hostname);
      CREATE INDEX hosts_client_idx ON hosts (client_id);
      -- The stale-agent sweep reads only online hosts by age.
      CREATE INDEX hosts_online_seen_idx ON hosts (last_seen_at) WHERE agent_status = 'online';
      CREATE INDEX hosts_tags_gin ON hosts USING gin (tags jsonb_path_ops);
      CREATE INDEX hosts_labels_gin ON hosts USING gin (labels jsonb_path_ops);

      -- One-time install tokens: shown once, stored as a SHA-256 hash, consumed by the enrolment that completes.
      CREATE TABLE install_tokens (
        id uuid PRIMARY KEY,
        environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        token_hash bytea NOT NULL UNIQUE,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        used_by_agent_id uuid,
        created_by uuid,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      -- Agents: 'pending' between enroll and complete (holding the challenge), then 'active', finally 'revoked'.
      CREATE TABLE agents (
        id uuid PRIMARY KEY,
        client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
        host_id uuid,
        install_token_id uuid REFERENCES install_tokens (id) ON DELETE SET NULL,
        public_key text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'active', 'revoked')),
        hostname text NOT NULL,
        os text NOT NULL DEFAULT '',
        arch text NOT NULL DEFAULT '',
        agent_version text NOT NULL DEFAULT '',
        challenge_hash bytea,
        challenge_expires_at timestamptz,
        credentials_expires_at timestamptz,
        enrolled_at timestamptz,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX agents_client_idx ON agents (client_id, environment_id);
      CREATE INDEX agents_public_key_idx ON agents (public_key);

      CREATE TABLE host_configs (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        config_type text NOT NULL CHECK (config_type IN ('watch_files')),
        config_data jsonb NOT NULL,
        version integer NOT NULL CHECK (version >= 1),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (host_id, config_type)
      );

      -- Integration types: the catalogue (seeded below); a type an agent reports that is not known is added.
      CREATE TABLE integrations (
        id text PRIMARY KEY,
        name text NOT NULL,
        category text NOT NULL,
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now()
      );
      INSERT INTO integrations (id, name, category, description) VALUES
        ('postgresql', 'PostgreSQL', 'database', 'PostgreSQL server: connections, settings, replication'),
        ('mysql', 'MySQL', 'database', 'MySQL / MariaDB server'),
        ('redis', 'Redis', 'cache', 'Redis or Valkey server: memory, persistence, clients'),
        ('nats', 'NATS', 'messaging', 'NATS server: connections, JetStream, limits'),
        ('nginx', 'nginx', 'web', 'nginx web server'),
        ('docker', 'Docker', 'containers', 'Docker engine'),
        ('clickhouse', 'ClickHouse', 'database', 'ClickHouse server'),
        ('victoriametrics', 'VictoriaMetrics', 'monitoring', 'VictoriaMetrics time-series store');

      CREATE TABLE host_integrations (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        client_id uuid NOT NULL,
        integration_id text NOT NULL REFERENCES integrations (id),
        collector_name text NOT NULL,
        status text NOT NULL,
        status_message text NOT NULL DEFAULT '',
        enabled boolean NOT NULL DEFAULT true,
        config jsonb NOT NULL DEFAULT '{}',
        config_updated_at timestamptz,
        last_seen_at timestamptz NOT NULL,
        UNIQUE (host_id, integration_id)
      );
      CREATE INDEX host_integrations_type_idx ON host_integrations (integration_id, client_id);
      CREATE INDEX host_integrations_client_idx ON host_integrations (client_id);

      CREATE TABLE host_processes (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        pid integer NOT NULL,
        name text NOT NULL,
        command text NOT NULL,
        username text NOT NULL,
        state text NOT NULL,
        ppid integer NOT NULL,
        threads integer NOT NULL,
        cpu_percent double precision NOT NULL,
        memory_percent double precision NOT NULL,
        memory_rss_bytes bigint NOT NULL,
        memory_vms_bytes bigint NOT NULL,
        started_at timestamptz,
        PRIMARY KEY (host_id, pid)
      );
      CREATE INDEX host_processes_cpu_idx ON host_processes (host_id, cpu_percent DESC, pid);

      CREATE TABLE host_services (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL,
        load_state text NOT NULL,
        active_state text NOT NULL,
        sub_state text NOT NULL,
        enabled boolean,
        main_pid integer,
        manager text NOT NULL,
        PRIMARY KEY (host_id, name)
      );
      CREATE INDEX host_services_name_idx ON host_services (name, active_state);

      CREATE TABLE host_packages (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        name text NOT NULL,
        version text NOT NULL,
        architecture text NOT NULL,
        manager text NOT NULL,
        description text NOT NULL,
        installed_size_bytes bigint,
        PRIMARY KEY (host_id, manager, name, architecture)
      );
      CREATE INDEX host_packages_name_idx ON host_packages (name, version);

      CREATE TABLE host_ports (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        ord integer NOT NULL,
        protocol text NOT NULL,
        local_address text NOT NULL,
        local_port integer NOT NULL,
        remote_address text NOT NULL,
        remote_port integer NOT NULL,
        state text NOT NULL,
        pid integer,
        process_name text NOT NULL,
        PRIMARY KEY (host_id, ord)
      );

      CREATE TABLE host_interfaces (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        name text NOT NULL,
        mac_address text NOT NULL,
        ipv4_addresses text[] NOT NULL,
        ipv6_addresses text[] NOT NULL,
        mtu integer,
        state text NOT NULL,
        speed_mbps integer,
        rx_bytes bigint NOT NULL,
        tx_bytes bigint NOT NULL,
        PRIMARY KEY (host_id, name)
      );

      CREATE TABLE host_users (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        username text NOT NULL,
        uid bigint NOT NULL,
        gid bigint NOT NULL,
        home text NOT NULL,
        shell text NOT NULL,
        gecos text NOT NULL,
        is_system boolean NOT NULL,
        groups text[] NOT NULL,
        PRIMARY KEY (host_id, username)
      );

      CREATE TABLE host_cron_jobs (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        ord integer NOT NULL,
        username text NOT NULL,
        schedule text NOT NULL,
        command text NOT NULL,
        source text NOT NULL,
        is_active boolean NOT NULL
      );
      CREATE INDEX host_cron_jobs_host_idx ON host_cron_jobs (host_id, ord);

      CREATE TABLE host_gpu_devices (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        device_index integer NOT NULL,
        name text NOT NULL,
        vendor text NOT NULL,
        driver_version text NOT NULL,
        memory_total_bytes bigint,
        pci_bus_id text NOT NULL,
        architecture text NOT NULL
      );
      CREATE INDEX host_gpu_devices_host_idx ON host_gpu_devices (host_id, device_index);

      CREATE TABLE host_firewall_rules (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        ord integer NOT NULL,
        chain text NOT NULL,
        rule_number integer NOT NULL,
        target text NOT NULL,
        protocol text NOT NULL,
        port text NOT NULL,
        tool text NOT NULL,
        table_name text NOT NULL,
        rule_text text NOT NULL
      );
      CREATE INDEX host_firewall_rules_host_idx ON host_firewall_rules (host_id, ord);

      CREATE TABLE host_certificates (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        subject text NOT NULL,
        issuer text NOT NULL,
        not_before timestamptz NOT NULL,
        not_after timestamptz NOT NULL,
        fingerprint_sha256 text NOT NULL,
        is_ca boolean NOT NULL,
        key_algorithm text NOT NULL,
        key_bits integer,
        path text NOT NULL
      );
      CREATE INDEX host_certificates_host_idx ON host_certificates (host_id, not_after);

      CREATE TABLE host_kernel_modules (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        name text NOT NULL,
        size_bytes bigint NOT NULL,
        instances integer NOT NULL,
        used_by text[] NOT NULL
      );
      CREATE INDEX host_kernel_modules_host_idx ON host_kernel_modules (host_id, name);

      CREATE TABLE host_security_items (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        category text NOT NULL,
        key text NOT NULL,
        value text NOT NULL
      );
      CREATE INDEX host_security_items_host_idx ON host_security_items (host_id, category, key);

      CREATE TABLE host_containers (
        host_id uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        container_id text NOT NULL,
        name text NOT NULL,
        image text NOT NULL,
        state text NOT NULL,
        status text NOT NULL,
        runtime text NOT NULL,
        created_at timestamptz,
        labels jsonb NOT NULL,
        PRIMARY KEY (host_id, container_id)
      );
      CREATE INDEX host_containers_name_idx ON host_containers (name, image);
    `);
  }

  override down(): void {
    this
      .addSql(`DROP TABLE IF EXISTS host_containers, host_security_items, host_kernel_modules, host_certificates, host_firewall_rules,
      host_gpu_devices, host_cron_jobs, host_users, host_interfaces, host_ports, host_packages, host_services, host_processes,
      host_integrations, integrations, host_configs, agents, install_tokens, hosts, environments CASCADE;`);
  }
}
