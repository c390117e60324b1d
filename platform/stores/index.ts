import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { DEFAULT_KEY_PREFIX, openKv, redactCredentials, type KvOptions, type KvReader, type KvStore } from './kv.ts';
import { openNearCache, type NearCache } from './kv-near-cache.ts';
import { openOrm, type OpenOrmOptions } from './postgres.ts';

/** How a process opens its stores: Valkey's key prefix, and the ORM entities of the domains it runs. */
export interface StoresOptions extends KvOptions {
  entities?: OpenOrmOptions['entities'];
}

/** A store the process cannot work without is unreachable; the message names the variable that points at it. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/**
 * The shared stores of one process (PostgreSQL, Valkey), each opened on first use and closed once at shutdown. A
 * store that belongs to one domain (the metrics store, the analytics store, uploads) lives in that domain, which may
 * keep it here with `owned` so that it is opened once per process and closed with the rest.
 */
export class Stores {
  private ormP: Promise<MikroORM> | undefined;
  private kvP: Promise<KvStore> | undefined;
  private nearP: Promise<NearCache> | undefined;
  private readonly ownedStores = new Map<string, { value: Promise<unknown>; close: (v: never) => Promise<unknown> }>();

  private readonly config: Config;
  private readonly log: Logger;
  private readonly kvOptions: KvOptions;
  private readonly entities: NonNullable<OpenOrmOptions['entities']>;
  constructor(config: Config, log: Logger, options: StoresOptions = {}) {
    this.config = config;
    this.log = log;
    const { entities, ...kvOptions } = options;
    this.kvOptions = kvOptions;
    this.entities = entities ?? [];
  }

  /**
   * A domain's own store under `name`, opened by `open` on first use (a failed open is forgotten, so the next call
   * tries again) and closed by `close` with the others.
   */
  owned<T>(name: string, open: () => Promise<T>, close: (store: T) => Promise<unknown>): Promise<T> {
    const held = this.ownedStores.get(name);
    if (held) return held.value as Promise<T>;
    const value = open();
    this.ownedStores.set(name, { value, close: close as (v: never) => Promise<unknown> });
    value.catch(() => this.ownedStores.delete(name));
    return value;
  }

  /**
   * The ORM, opened on first use and checked with a round trip: a server that cannot be reached fails here with a
   * message naming SVC_DB_URL (start-up then stops, and the supervisor restarts the process), not at the first
   * query of some actor. A failed open is forgotten, so the next call tries again.
   */
  orm(): Promise<MikroORM> {
    this.ormP ??= (async () => {
      const orm = await openOrm({
        url: this.config.SVC_DB_URL,
        entities: this.entities,
        log: this.log.child({ store: 'postgres' }),
        applicationName: 'svc',
      });
      try {
        // MikroORM 7 connects lazily (its checkConnection() reports "not established" until a first query): ask.
        await orm.em.fork().getConnection().execute('select 1');
      } catch (err) {
        await orm.close(true).catch(() => undefined);
        const reason = err instanceof Error ? err.message || err.name : String(err);
        throw new StoreUnavailableError(
          `PostgreSQL is not reachable at ${redactCredentials(this.config.SVC_DB_URL)} (SVC_DB_URL): ${reason}`,
          { cause: err },
        );
      }
      return orm;
    })();
    this.ormP.catch(() => (this.ormP = undefined));
    return this.ormP;
  }
  kv(): Promise<KvStore> {
    this.kvP ??= openKv(this.config, this.log.child({ store: 'kv' }), this.kvOptions);
    return this.kvP;
  }
  /**
   * Reads of the shared store kept in this process for as long as Valkey announces no change to them
   * (kv-near-cache.ts): what a gateway reads on every request. Without Valkey, the in-process store itself.
   */
  async kvReads(): Promise<KvReader> {
    const url = this.config.SVC_VALKEY_URL;
    if (!url) return this.kv();
    this.nearP ??= openNearCache(
      url,
      this.log.child({ store: 'kv-near-cache' }),
      this.kvOptions.keyPrefix ?? DEFAULT_KEY_PREFIX,
    );
    return this.nearP;
  }
  async close(): Promise<void> {
    const settle = async <T>(p: Promise<T> | undefined, close: (v: T) => Promise<unknown>): Promise<void> => {
      if (!p) return;
      try {
        await close(await p);
      } catch (err) {
        this.log.warn({ err }, 'store close failed');
      }
    };
    await Promise.all([
      settle(this.ormP, (o) => o.close()),
      settle(this.kvP, (k) => k.close()),
      settle(this.nearP, (n) => n.close()),
      ...[...this.ownedStores.values()].map((o) => settle(o.value, (v) => o.close(v as never))),
    ]);
  }
}
