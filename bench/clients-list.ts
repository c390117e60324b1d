// The hop part's one request, GET /api/v1/clients with a bearer JWT, as the comparison paths serve it
// (bench/direct-server.ts, bench/moleculer-server.ts): the gateway's rate limiter, token check and access cache, then
// the fleet actor's own list handler with the scope ActorHost would give it. Nothing of the actor path's envelope,
// signature or zod parsing.
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { AgentRevoker } from '../actors/fleet/agents/revocation.ts';
import { clientHandlers } from '../actors/fleet/clients.ts';
import { AccessCache, AccessResolver } from '../actors/identity/access.ts';
import { AccessTokens } from '../actors/identity/crypto.ts';
import { allEntities } from '../actors/index.ts';
import type { SystemCatalogue } from '../contracts/catalogue.ts';
import { DomainError } from '../contracts/errors.ts';
import { rateLimitGuard } from '../gateway/shared/rate-limit.ts';
import { AuditRecorder } from '../platform/audit.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { runWithDeadline } from '../platform/deadline.ts';
import { setNamespace } from '../platform/namespace.ts';
import { connectNats } from '../platform/nats.ts';
import type { RequestScope } from '../platform/serve.ts';
import { Stores } from '../platform/stores/index.ts';
import { formatTraceparent, newTrace } from '../platform/trace.ts';

export type Ctx = RequestScope<SystemCatalogue>['ctx'];
export type ClientsPage = { data: unknown[]; meta: { total: number; page: number; per_page: number } };

export const config = loadConfig();
// Started by bench/run.ts, whose SVC_NAMESPACE (the bench's own) it inherits.
setNamespace(config.SVC_NAMESPACE);
export const log = pino({ level: 'warn' });
export const stores = new Stores(config, log, { entities: allEntities });
const orm = await stores.orm();
const kv = await stores.kv();
// The gateway's own reads of the access cache (a near cache on Valkey), so the paths differ only by the hop.
export const accessCache = new AccessCache(await stores.kvReads());
export const resolver = new AccessResolver(() => orm.em.fork(), kv, systemClock);
export const tokens = new AccessTokens(config.SVC_JWT_SECRET!, config.SVC_JWT_ACCESS_TTL);
// The list handler reads and never audits; the recorder gets a real connection all the same (nothing is typed away).
export const nc = await connectNats(
  config.SVC_NATS_URL,
  'bench-direct',
  log,
  config.SVC_NATS_CREDS,
  config.SVC_NATS_CA,
);
export const revoker = await AgentRevoker.start(config, log);
export const list = clientHandlers({ orm, audit: new AuditRecorder(nc, systemClock), revoker })[
  'svc.fleet.clients.list'
]!;
// The gateway's per-IP rate limiter too (one Valkey round trip per request), so the paths differ only by the hop.
export const guard = rateLimitGuard(kv, { auth: config.SVC_AUTH_RATE_LIMIT, api: config.SVC_API_RATE_LIMIT });

/** What the gateway does before its call: the rate limiter, the token, the access cache; undefined without a token. */
export async function authenticate(ip: string, authorization: string | undefined): Promise<Ctx | undefined> {
  await guard({ ip }, 'api');
  const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
  if (!token) return undefined;
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
export function scopeOf(ctx: Ctx): RequestScope<SystemCatalogue> {
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
export async function listClients(ctx: Ctx): Promise<ClientsPage> {
  const scope = scopeOf(ctx);
  const page = await runWithDeadline({ deadline: scope.deadline, signal: scope.signal }, () =>
    list({ page: 1, per_page: 20, sort: 'name', order: 'asc' }, scope),
  );
  return { data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } };
}

/** Closes what this module opened. */
export async function closeClientsList(): Promise<void> {
  await nc.drain();
  await revoker.close();
  await stores.close();
}
