import type { CallerContext } from '../../contracts/context.ts';
import type { ClientRef, EnvironmentRef, HostRef } from '../../contracts/domains/fleet-lookup.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import type { CallOptions, Caller } from '../../platform/call.ts';

type Lookup =
  | { kind: 'host'; value: HostRef }
  | { kind: 'environment'; value: EnvironmentRef }
  | { kind: 'client'; value: ClientRef };

/**
 * What the events domain knows of the fleet's clients, environments and hosts, asked through the fleet's lookup
 * subjects (never its tables) and cached briefly: a host's environment and client never change, and a resource
 * deleted meanwhile is at worst shown for `ttlMs` more (its rows go with it by foreign key).
 */
export class FleetDirectory {
  private readonly cache = new Map<string, { hit: Lookup | null; at: number }>();

  private readonly caller: Caller<SystemCatalogue>;
  private readonly ttlMs: number;
  constructor(caller: Caller<SystemCatalogue>, ttlMs = 30_000) {
    this.caller = caller;
    this.ttlMs = ttlMs;
  }

  private fresh(key: string): { hit: Lookup | null } | undefined {
    const e = this.cache.get(key);
    return e && Date.now() - e.at < this.ttlMs ? e : undefined;
  }

  private remember(key: string, hit: Lookup | null): void {
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(key, { hit, at: Date.now() });
  }

  /** Resolves ids, from the cache or in one request; what does not exist is absent from the answer. */
  async resolve(
    ctx: CallerContext,
    ids: { hosts?: string[]; environments?: string[]; clients?: string[] },
    opts: CallOptions = {},
  ): Promise<Map<string, Lookup>> {
    const out = new Map<string, Lookup>();
    const missing = { host: [] as string[], environment: [] as string[], client: [] as string[] };
    const want = (kind: 'host' | 'environment' | 'client', list: string[] | undefined): void => {
      for (const id of new Set(list ?? [])) {
        const c = this.fresh(`${kind}:${id}`);
        if (c === undefined) missing[kind].push(id);
        else if (c.hit) out.set(`${kind}:${id}`, c.hit);
      }
    };
    want('host', ids.hosts);
    want('environment', ids.environments);
    want('client', ids.clients);
    if (missing.host.length + missing.environment.length + missing.client.length > 0) {
      const r = await this.caller.call(
        'svc.fleet.lookup.resolve',
        { host_ids: missing.host, environment_ids: missing.environment, client_ids: missing.client },
        ctx,
        opts,
      );
      const found = new Set<string>();
      for (const h of r.hosts) found.add(this.put(out, { kind: 'host', value: h }));
      for (const e of r.environments) found.add(this.put(out, { kind: 'environment', value: e }));
      for (const c of r.clients) found.add(this.put(out, { kind: 'client', value: c }));
      for (const [kind, list] of Object.entries(missing))
        for (const id of list) if (!found.has(`${kind}:${id}`)) this.remember(`${kind}:${id}`, null);
    }
    return out;
  }

  private put(out: Map<string, Lookup>, hit: Lookup): string {
    const key = `${hit.kind}:${hit.value.id}`;
    out.set(key, hit);
    this.remember(key, hit);
    return key;
  }

  async host(ctx: CallerContext, id: string, opts: CallOptions = {}): Promise<HostRef | undefined> {
    const hit = (await this.resolve(ctx, { hosts: [id] }, opts)).get(`host:${id}`);
    return hit?.kind === 'host' ? hit.value : undefined;
  }

  async environment(ctx: CallerContext, id: string, opts: CallOptions = {}): Promise<EnvironmentRef | undefined> {
    const hit = (await this.resolve(ctx, { environments: [id] }, opts)).get(`environment:${id}`);
    return hit?.kind === 'environment' ? hit.value : undefined;
  }

  async client(ctx: CallerContext, id: string, opts: CallOptions = {}): Promise<ClientRef | undefined> {
    const hit = (await this.resolve(ctx, { clients: [id] }, opts)).get(`client:${id}`);
    return hit?.kind === 'client' ? hit.value : undefined;
  }

  /** The host a set of names designates within a client (and environment), as the fleet matches it; not cached. */
  async matchHost(
    ctx: CallerContext,
    clientId: string,
    environmentId: string | null,
    names: string[],
    opts: CallOptions = {},
  ): Promise<HostRef | null> {
    if (names.length === 0) return null;
    const { host } = await this.caller.call(
      'svc.fleet.lookup.match_host',
      { client_id: clientId, environment_id: environmentId, names: names.slice(0, 10) },
      ctx,
      opts,
    );
    return host;
  }
}
