// The comparison path of the foundation benchmark: the same authenticated GET /api/v1/clients answered by a bare
// Fastify route that verifies the token, resolves access through the same cache and queries PostgreSQL itself —
// everything the actor path does except the NATS hops, envelopes and zod parsing.
import Fastify from 'fastify';
import { AccessResolver } from '../actors/identity/access.ts';
import { AccessTokens } from '../actors/identity/crypto.ts';
import { ClientEntity } from '../actors/fleet/entities.ts';
import { systemClock } from '../actors/runtime/clock.ts';
import { loadConfig } from '../actors/runtime/config.ts';
import { createLogger } from '../actors/runtime/logger.ts';
import { Stores } from '../actors/runtime/stores/index.ts';

const config = loadConfig();
const log = createLogger('warn');
const stores = new Stores(config, log);
const orm = await stores.orm();
const kv = await stores.kv();
const resolver = new AccessResolver(() => orm.em.fork(), kv, systemClock);
const tokens = new AccessTokens(config.SVC_JWT_SECRET!, config.SVC_JWT_ACCESS_TTL);
const app = Fastify();
app.get('/api/v1/clients', async (req, reply) => {
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!token) return reply.status(401).send({ error: { code: 'unauthorized' } });
  const claims = await tokens.verify(token);
  const user = await resolver.resolveUser(claims.sub);
  if (!user.access.super_admin) return reply.status(403).send({ error: { code: 'forbidden' } });
  const em = orm.em.fork();
  const [rows, total] = await em.findAndCount(ClientEntity, {}, { orderBy: { name: 'asc', id: 'asc' }, limit: 20, offset: 0 });
  return {
    data: rows.map((c) => ({ id: c.id, name: c.name, slug: c.slug, created_at: c.created_at.toISOString(), updated_at: c.updated_at.toISOString() })),
    meta: { total, page: 1, per_page: 20 },
  };
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.BENCH_DIRECT_PORT ?? 18090) });
process.on('SIGTERM', () => {
  void app.close().then(() => stores.close()).then(() => process.exit(0));
});
