import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../contracts/access.ts';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import {
  ConfigUpdateCommand,
  type ConfigFetchReply,
  type WatchFilesConfig,
} from '../../../contracts/domains/agent-telemetry.ts';
import { WATCH_CONFIG_IMMUTABLE, type WatchConfig } from '../../../contracts/domains/fleet-agents.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import { agentSubjects } from '../../../platform/broker/permissions.ts';
import type { AuditRecorder } from '../../../platform/audit.ts';
import type { BrokerIssuer } from '../../../platform/broker/issuer.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Config } from '../../../platform/config.ts';
import type { Logger } from '../../../platform/logger.ts';
import { namespace } from '../../../platform/namespace.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { iso, sql } from '../../../platform/stores/sql.ts';
import { loadHost } from '../scope.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

interface ConfigRow {
  id: string;
  host_id: string;
  config_type: 'watch_files';
  config_data: WatchFilesConfig;
  version: number;
  created_at: string;
  updated_at: string;
}
const COLUMNS = 'id, host_id, config_type, config_data, version, created_at, updated_at';

const out = (r: ConfigRow): WatchConfig => ({
  id: r.id,
  host_id: r.host_id,
  config_type: r.config_type,
  config_data: {
    paths: r.config_data.paths,
    exclude_patterns: r.config_data.exclude_patterns ?? [],
    sensitive_files: r.config_data.sensitive_files ?? [],
    max_file_size: r.config_data.max_file_size,
  },
  version: r.version,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

export interface WatchConfigDeps {
  orm: MikroORM;
  nc: NatsConnection;
  audit: AuditRecorder;
  log: Logger;
}

const encoder = new TextEncoder();

export function watchConfigHandlers(deps: WatchConfigDeps): Handlers<SystemCatalogue, 'fleet'> {
  const fork = (): EntityManager => deps.orm.em.fork();
  return {
    'svc.fleet.watch_config.get': async ({ host_id }, { ctx }) => {
      requirePermission(ctx, 'hosts:read');
      const em = fork();
      await loadHost(em, ctx, host_id, 'hosts:read');
      const [row] = await sql<ConfigRow>(
        em,
        `SELECT ${COLUMNS} FROM host_configs WHERE host_id = ? AND config_type = 'watch_files'`,
        [host_id],
      );
      if (!row) throw new DomainError('not_found', 'no watch config was set for this host');
      return out(row);
    },

    'svc.fleet.watch_config.put': async (
      { host_id, paths, exclude_patterns, sensitive_files, max_file_size, sent },
      { ctx },
    ) => {
      requirePermission(ctx, 'hosts:write');
      const data: WatchFilesConfig = { paths, exclude_patterns, sensitive_files, max_file_size };
      const { row, agentId, clientId } = await fork().transactional(async (tx) => {
        const host = await loadHost(tx, ctx, host_id, 'hosts:write', true);
        refuseChanges(sent, { host_id, config_type: 'watch_files' }, WATCH_CONFIG_IMMUTABLE);
        // The host row lock serializes PUTs of one host, so versions go 1, 2, 3... without gaps or repeats.
        const [saved] = await sql<ConfigRow>(
          tx,
          `INSERT INTO host_configs (id, host_id, config_type, config_data, version) VALUES (?, ?, 'watch_files', ?::jsonb, 1)
           ON CONFLICT (host_id, config_type) DO UPDATE SET config_data = EXCLUDED.config_data, version = host_configs.version + 1, updated_at = now()
           RETURNING ${COLUMNS}`,
          [randomUUID(), host_id, pgJson(data)],
        );
        return { row: saved as ConfigRow, agentId: host.agent_id, clientId: host.client_id };
      });
      await deps.audit.record(ctx, {
        action: 'watch_config.updated',
        resource_type: 'host',
        resource_id: host_id,
        client_ids: [clientId],
        details: { version: row.version, paths: data.paths.length },
      });
      // An online agent applies it at once; an offline one fetches the latest config at its next start.
      if (agentId) {
        const command = ConfigUpdateCommand.parse({
          type: 'config_update',
          config_type: 'watch_files',
          version: row.version,
          payload: data,
        });
        try {
          deps.nc.publish(agentSubjects(agentId).commands, encoder.encode(JSON.stringify(command)));
        } catch (err) {
          deps.log.warn(
            { err, host_id, agent_id: agentId },
            'config_update command not sent; the agent gets it at its next config fetch',
          );
        }
      }
      return out(row);
    },
  };
}

export interface ConfigFetchDeps {
  orm: MikroORM;
  clock: Clock;
  config: Config;
  issuer: BrokerIssuer | undefined;
}

/**
 * Config fetch on `svc.system.agent.config.{agentID}`: every config type of the agent's host, and fresh broker
 * credentials once the current ones are past half their lifetime (the agent rewrites its creds file).
 */
export function configFetchHandler(deps: ConfigFetchDeps) {
  return async (agentId: string): Promise<ConfigFetchReply | undefined> => {
    const em = deps.orm.em.fork();
    const [agent] = await sql<{
      id: string;
      host_id: string | null;
      public_key: string;
      status: string;
      credentials_expires_at: Date | string | null;
      enrolled_at: Date | string | null;
    }>(
      em,
      `SELECT id, host_id, public_key, status, credentials_expires_at, enrolled_at FROM agents WHERE id::text = ?`,
      [agentId],
    );
    if (!agent || agent.status !== 'active' || !agent.host_id) {
      // In a namespace, other systems share this broker and this subject: the agent may be one of theirs.
      if (namespace()) return undefined;
      throw new DomainError('not_found', 'agent is not enrolled');
    }
    const rows = await sql<ConfigRow>(
      em,
      `SELECT ${COLUMNS} FROM host_configs WHERE host_id = ? ORDER BY config_type`,
      [agent.host_id],
    );
    const reply: ConfigFetchReply = {
      agent_id: agent.id,
      host_id: agent.host_id,
      configs: rows.map((r) => ({
        config_type: r.config_type,
        version: r.version,
        payload: out(r).config_data,
        updated_at: iso(r.updated_at),
      })),
    };
    const now = deps.clock.now();
    const expires = agent.credentials_expires_at ? new Date(agent.credentials_expires_at).getTime() : undefined;
    const halfLife = deps.config.SVC_AGENT_CREDENTIALS_TTL_SECONDS * 500;
    if (deps.issuer && expires !== undefined && expires - now < halfLife) {
      const fresh = await deps.issuer.agent(agent.id, agent.public_key, deps.config.SVC_AGENT_CREDENTIALS_TTL_SECONDS);
      const renewed = await sql<{ id: string }>(
        em,
        `UPDATE agents SET credentials_expires_at = ?, updated_at = now() WHERE id = ? AND status = 'active' RETURNING id`,
        [new Date(fresh.expiresAt * 1000), agent.id],
      );
      // Revoked between the read and now: no credentials (the broker refuses this key anyway).
      if (renewed.length === 0) throw new DomainError('not_found', 'agent is not enrolled');
      reply.credentials = { user_jwt: fresh.jwt, expires_at: new Date(fresh.expiresAt * 1000).toISOString() };
    }
    return reply;
  };
}
