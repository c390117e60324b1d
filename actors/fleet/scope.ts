import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { requireOnClient } from '../../platform/scope.ts';
import { sql } from '../../platform/stores/sql.ts';

// The generic client-scope rules live in the runtime (shared with the service desk and events); fleet code imports them here.
export { inReach, requireOnClient } from '../../platform/scope.ts';

/** A client the caller may act on with `permission` (404 / 403 as above), with `columns`; `lock` holds it for the transaction. */
export async function loadClient<T extends { id: string } = { id: string }>(
  em: EntityManager,
  ctx: CallerContext,
  id: string,
  permission: string,
  columns = 'id',
  lock = false,
): Promise<T> {
  requireOnClient(ctx, id, permission, 'client');
  const [row] = await sql<T>(em, `SELECT ${columns} FROM clients WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [id]);
  if (!row) throw new DomainError('not_found', 'client not found');
  return row;
}

export interface EnvironmentRow {
  id: string;
  client_id: string;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
}
export const ENVIRONMENT_COLUMNS = 'id, client_id, name, slug, created_at, updated_at';

/** An environment the caller may act on with `permission` (404 / 403 as above); `lock` holds it for the transaction. */
export async function loadEnvironment(
  em: EntityManager,
  ctx: CallerContext,
  id: string,
  permission: string,
  lock = false,
): Promise<EnvironmentRow> {
  const [row] = await sql<EnvironmentRow>(
    em,
    `SELECT ${ENVIRONMENT_COLUMNS} FROM environments WHERE id = ?${lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  if (!row) throw new DomainError('not_found', 'environment not found');
  requireOnClient(ctx, row.client_id, permission, 'environment');
  return row;
}

export interface HostRow {
  id: string;
  environment_id: string;
  client_id: string;
  agent_id: string | null;
  hostname: string;
  ip_address: string;
  os: string;
  os_version: string;
  kernel_version: string;
  arch: string;
  cpu_cores: number;
  memory_total_bytes: string | number;
  agent_status: 'online' | 'offline';
  agent_version: string;
  last_seen_at: string | null;
  tags: Record<string, string>;
  labels: Record<string, string>;
  created_at: string;
  updated_at: string;
}
export const HOST_COLUMNS =
  'id, environment_id, client_id, agent_id, hostname, ip_address, os, os_version, kernel_version, arch, cpu_cores, memory_total_bytes, agent_status, agent_version, last_seen_at, tags, labels, created_at, updated_at';

/** A host the caller may act on with `permission` (404 / 403 as above). */
export async function loadHost(
  em: EntityManager,
  ctx: CallerContext,
  id: string,
  permission: string,
  lock = false,
): Promise<HostRow> {
  const [row] = await sql<HostRow>(em, `SELECT ${HOST_COLUMNS} FROM hosts WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [
    id,
  ]);
  if (!row) throw new DomainError('not_found', 'host not found');
  requireOnClient(ctx, row.client_id, permission, 'host');
  return row;
}
