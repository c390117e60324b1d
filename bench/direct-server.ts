// The comparison path of the foundation benchmark: the same authenticated GET /api/v1/clients answered by a bare
// Fastify route that counts the request on the same rate limiter, verifies the token, resolves access through the same
// cache and runs the fleet actor's own list handler in-process — everything the actor path does except the NATS hops,
// envelopes, signatures and zod parsing.
// And the floor of the hop: GET /floor/clients does the same but runs the handler behind one bare NATS request-reply
// (JSON both ways, no envelope, signature, zod or framework), so the bench can show what the transport alone costs.
import { allEntities } from '../actors/index.ts';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { AgentRevoker } from '../actors/fleet/agents/revocation.ts';
import { clientHandlers } from '../actors/fleet/clients.ts';
import { AuditRecorder } from '../platform/audit.ts';
import { AccessTokens } from '../actors/identity/crypto.ts';
import { catalogue, type SystemCatalogue } from '../contracts/catalogue.ts';
import type { Caller } from '../platform/call.ts';
import { AccessCache, AccessResolver } from '../actors/identity/access.ts';
import { createLogger } from '../platform/logger.ts';
import { registerClientRoutes } from '../gateway/console/routes/clients.ts';
import { createGatewayApp } from '../gateway/shared/app.ts';
import { TokenAuthenticator } from '../gateway/shared/authenticate.ts';
import type { GatewayDeps } from '../gateway/shared/bridge.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { setNamespace, wireRequestSubject } from '../platform/namespace.ts';
import { runWithDeadline } from '../platform/deadline.ts';
import { connectNats } from '../platform/nats.ts';
import type { RequestScope } from '../platform/serve.ts';
import { formatTraceparent, newTrace } from '../platform/trace.ts';
import { DomainError } from '../contracts/errors.ts';
import { Stores } from '../platform/stores/index.ts';
import { rateLimitGuard } from '../gateway/shared/rate-limit.ts';

const config = loadConfig();
// Started by bench/run.ts, whose SVC_NAMESPACE (the bench's own) it inherits.
setNamespace(config.SVC_NAMESPACE);
const log = pino({ level: 'warn' });
const stores = new Stores(config, log, { entities: allEntities });
const orm = await stores.orm();
const kv = await stores.kv();
// The gateway's own reads of the access cache (a near cache on Valkey), so the two paths differ only by the hop.
const accessCache = new AccessCache(await stores.kvReads());
const resolver = new AccessResolver(() => orm.em.fork(), kv, systemClock);
const tokens = new AccessTokens(config.SVC_JWT_SECRET!, config.SVC_JWT_ACCESS_TTL);
// The list handler reads and never audits; the recorder gets a real connection all the same (nothing is typed away).
const nc = await connectNats(config.SVC_NATS_URL, 'bench-direct', log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
const revoker = await AgentRevoker.start(config, log);
const list = clientHandlers({ orm, audit: new AuditRecorder(nc, systemClock), revoker })['svc.fleet.clients.list']!;

// The gateway's per-IP rate limiter too (one Valkey round trip per request), so the two paths differ only by the hop.
const guard = rateLimitGuard(kv, { auth: config.SVC_AUTH_RATE_LIMIT, api: config.SVC_API_RATE_LIMIT });
const app = Fastify();

type Ctx = RequestScope<SystemCatalogue>['ctx'];

/** What the gateway does before its call: the rate limiter, the token, the access cache; undefined after a 401. */
async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<Ctx | undefined> {
  await guard(req, 'api');
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!token) {
    void reply.status(401).send({ error: { code: 'unauthorized' } });
    return undefined;
  }
  const claims = await tokens.verify(token);
  const user = (await accessCache.user(claims.sub)) ?? (await resolver.resolveUser(claims.sub));
  return {
    request_id: randomUUID(),
    principal: {
      kind: 'user' as const,
      user_id: user.user_id,
      session_id: claims.sid,
      email: user.email,
      is_super_admin: user.is_super_admin,
      mfa_enabled: user.mfa_enabled,
    },
    access: user.access,
  };
}

/** The scope ActorHost would give the list handler. */
function scopeOf(ctx: Ctx): RequestScope<SystemCatalogue> {
  return {
    ctx,
    log,
    signal: new AbortController().signal,
    deadline: Date.now() + 10_000,
    subject: 'svc.fleet.clients.list',
    traceparent: formatTraceparent(newTrace()),
    call: () => Promise.reject(new DomainError('internal_error', 'the bench paths make no calls')),
  };
}

/** The fleet actor's list handler with the scope ActorHost would give it, inside the same deadline scope. */
async function listClients(
  ctx: Ctx,
): Promise<{ data: unknown[]; meta: { total: number; page: number; per_page: number } }> {
  const scope = scopeOf(ctx);
  const page = await runWithDeadline({ deadline: scope.deadline, signal: scope.signal }, () =>
    list({ page: 1, per_page: 20, sort: 'name', order: 'asc' }, scope),
  );
  return { data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } };
}

app.get('/api/v1/clients', async (req, reply) => {
  const ctx = await authenticate(req, reply);
  return ctx ? listClients(ctx) : reply;
});

// Under svc. like every request subject, so the service credentials may use it.
const floorSubject = wireRequestSubject('svc.bench.floor.clients');
nc.subscribe(floorSubject, {
  queue: 'bench-floor',
  callback: (err, msg) => {
    if (err) throw err;
    void listClients(msg.json<{ ctx: Ctx }>().ctx).then(
      (answer) => msg.respond(JSON.stringify(answer)),
      (e: unknown) => msg.respond(JSON.stringify({ error: String(e) })),
    );
  },
});
app.get('/floor/clients', async (req, reply) => {
  const ctx = await authenticate(req, reply);
  if (!ctx) return reply;
  const answer = await nc.request(floorSubject, JSON.stringify({ ctx }), { timeout: 10_000 });
  return reply.type('application/json').send(answer.string());
});

await app.listen({ host: '127.0.0.1', port: Number(process.env.BENCH_DIRECT_PORT ?? 18090) });

// The gateway's own stack without the hop: the console gateway's app (its hooks, request ids, CORS, zod validation of
// the query, the access log line, error envelope), the same route declaration through `bridge`, the same
// authenticator and rate limiter, with a caller that runs the fleet actor's list handler in this process instead of
// sending the request over NATS. Beside the single-process path, it shows what the hop alone costs.
const inProcess = {
  catalogue,
  callForwardedPage: async (subject: string, input: unknown, ctx: Ctx): Promise<Uint8Array> => {
    if (subject !== 'svc.fleet.clients.list')
      throw new DomainError(
        'internal_error',
        `the bench's in-process caller serves only the client list, not ${subject}`,
      );
    const parsed = catalogue['svc.fleet.clients.list'].request.parse(input);
    const page = await runWithDeadline({ deadline: Date.now() + 10_000, signal: new AbortController().signal }, () =>
      list(parsed, scopeOf(ctx)),
    );
    return Buffer.from(
      JSON.stringify({ data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } }),
    );
  },
  // The authenticator's call on an access-cache miss, answered by the same resolver the bare path uses.
  call: async (subject: string, input: { user_id: string }): Promise<unknown> => {
    if (subject !== 'svc.identity.access.resolve')
      throw new DomainError('internal_error', `the bench's in-process caller does not serve ${subject}`);
    return resolver.resolveUser(input.user_id);
  },
} as unknown as Caller<SystemCatalogue>;
const gatewayLog = createLogger('warn');
const gatewayDeps: GatewayDeps = {
  caller: inProcess,
  requestTimeoutMs: config.SVC_REQUEST_TIMEOUT_MS,
  auth: new TokenAuthenticator(tokens, inProcess, accessCache),
  guard,
};
const gateway = await createGatewayApp(
  { style: 'console', title: 'bench', version: '0', config, log: gatewayLog },
  (a) => registerClientRoutes(a, gatewayDeps),
);
await gateway.listen({ host: '127.0.0.1', port: Number(process.env.BENCH_GATEWAY_NOHOP_PORT ?? 18091) });

process.on('SIGTERM', () => {
  void gateway
    .close()
    .then(() => app.close())
    .then(() => nc.drain())
    .then(() => revoker.close())
    .then(() => stores.close())
    .then(() => process.exit(0));
});
