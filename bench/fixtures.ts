// What several bench parts set up the same way: a client of their own with one environment, install tokens for it,
// and the signed-in super admin's caller context.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { CallerContext } from '../contracts/context.ts';

/** The part of a MikroORM connection the fixtures use. */
interface Sql {
  execute(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * A client named `name` with slug `slug` and one environment, made fresh: the previous run's client of that slug is
 * deleted first (its environments, hosts, agents and inventory cascade away).
 */
export async function freshBenchClient(
  conn: Sql,
  slug: string,
  name: string,
): Promise<{ clientId: string; envId: string }> {
  await conn.execute(`DELETE FROM clients WHERE slug = ?`, [slug]);
  const clientId = randomUUID();
  const envId = randomUUID();
  await conn.execute(`INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [clientId, name, slug]);
  await conn.execute(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, 'Bench', 'bench')`, [
    envId,
    clientId,
  ]);
  return { clientId, envId };
}

/** `count` one-time install tokens of the environment, valid for an hour, stored as the API stores them (SHA-256). */
export async function benchInstallTokens(
  conn: Sql,
  where: { clientId: string; envId: string },
  count: number,
): Promise<string[]> {
  const tokens = Array.from({ length: count }, () => `svc_it_${randomBytes(32).toString('base64url')}`);
  for (let i = 0; i < tokens.length; i += 500) {
    const chunk = tokens.slice(i, i + 500);
    await conn.execute(
      `INSERT INTO install_tokens (id, environment_id, client_id, token_hash, expires_at)
       SELECT gen_random_uuid(), ?, ?, decode(h, 'hex'), now() + interval '1 hour' FROM unnest(string_to_array(?, ',')) AS h`,
      [where.envId, where.clientId, chunk.map((t) => createHash('sha256').update(t).digest('hex')).join(',')],
    );
  }
  return tokens;
}

/** A super admin's caller context with a fresh request id, as the gateway would forward it. */
export const benchContext = (): CallerContext => ({
  request_id: randomUUID(),
  ip: '127.0.0.1',
  user_agent: 'autocannon',
  principal: {
    kind: 'user',
    user_id: randomUUID(),
    session_id: randomUUID(),
    email: 'bench@example.com',
    is_super_admin: true,
    mfa_enabled: true,
  },
  access: { super_admin: true, all_clients: [], clients: {} },
});
