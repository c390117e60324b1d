// The comparison path of the foundation benchmark: the same authenticated GET /api/v1/clients answered by a bare
// Fastify route that counts the request on the same rate limiter, verifies the token, resolves access through the same
// cache and runs the fleet actor's own list handler in-process — everything the actor path does except the NATS hops,
// envelopes, signatures and zod parsing.
// And the floor of the hop: GET /floor/clients does the same but runs the handler behind one bare NATS request-reply
// (JSON both ways, no envelope, signature, zod or framework), so the bench can show what the transport alone costs.
// Its other apps are the console gateway's stack with the handler in-process, then with a bare NATS hop, then with the
// runtime's hop: together they take the single process's cost apart one step at a time.
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { catalogue, type SystemCatalogue } from '../contracts/catalogue.ts';
import { DomainError } from '../contracts/errors.ts';
import { registerClientRoutes } from '../gateway/console/routes/clients.ts';
import { createGatewayApp } from '../gateway/shared/app.ts';
import { TokenAuthenticator } from '../gateway/shared/authenticate.ts';
import type { GatewayDeps } from '../gateway/shared/bridge.ts';
import type { Caller } from '../platform/call.ts';
import { ActorHost } from '../platform/serve.ts';
import { contextSigner } from '../platform/signing.ts';
import { runWithDeadline } from '../platform/deadline.ts';
import { createLogger } from '../platform/logger.ts';
import { wireRequestSubject } from '../platform/namespace.ts';
import {
  accessCache,
  authenticate as authenticateBearer,
  closeClientsList,
  config,
  guard,
  list,
  listClients,
  nc,
  resolver,
  scopeOf,
  tokens,
  type Ctx,
} from './clients-list.ts';

const app = Fastify();

/** What the gateway does before its call; undefined after a 401. */
async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<Ctx | undefined> {
  const ctx = await authenticateBearer(req.ip, req.headers.authorization);
  if (!ctx) void reply.status(401).send({ error: { code: 'unauthorized' } });
  return ctx;
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

// The hop inside the gateway's stack, one step at a time: the same app, route and authenticator, with the call made
// (1) as one bare NATS request-reply to the floor's subscriber, (2) through the runtime (Caller → NATS → ActorHost, the
// signed envelope, headers, input schema, deadline) to the fleet actor's list handler served by this process. Beside
// the single process, they show what the hop costs inside HTTP and what the rest of the system's process adds.
const viaBareHop = {
  catalogue,
  callForwardedPage: async (_subject: string, input: unknown, ctx: Ctx): Promise<Uint8Array> =>
    (await nc.request(floorSubject, JSON.stringify({ ctx, input }), { timeout: 10_000 })).data,
  call: inProcess.call.bind(inProcess),
} as unknown as Caller<SystemCatalogue>;
// This process's namespace is its own (bench/run.ts), so the single system's fleet actors never share this queue group.
const host = new ActorHost(nc, catalogue, contextSigner(config), gatewayLog, config.SVC_REQUEST_TIMEOUT_MS, false);
await host.serve('fleet', 'bench-direct-clients', { 'svc.fleet.clients.list': list });
const viaRuntime = {
  catalogue,
  callForwardedPage: host.caller.callForwardedPage.bind(host.caller),
  call: inProcess.call.bind(inProcess),
} as unknown as Caller<SystemCatalogue>;
const hopApps = await Promise.all(
  (
    [
      [viaBareHop, Number(process.env.BENCH_GATEWAY_BAREHOP_PORT ?? 18092)],
      [viaRuntime, Number(process.env.BENCH_GATEWAY_RUNTIME_PORT ?? 18093)],
    ] as const
  ).map(async ([caller, port]) => {
    const deps: GatewayDeps = { ...gatewayDeps, caller, auth: new TokenAuthenticator(tokens, caller, accessCache) };
    const app = await createGatewayApp(
      { style: 'console', title: 'bench', version: '0', config, log: gatewayLog },
      (a) => registerClientRoutes(a, deps),
    );
    await app.listen({ host: '127.0.0.1', port });
    return app;
  }),
);

process.on('SIGTERM', () => {
  void Promise.all(hopApps.map((a) => a.close()))
    .then(() => host.drain())
    .then(() => gateway.close())
    .then(() => app.close())
    .then(() => closeClientsList())
    .then(() => process.exit(0));
});
