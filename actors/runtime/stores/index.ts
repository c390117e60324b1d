import type { MikroORM } from '@mikro-orm/postgresql';
import { allEntities } from '../../entities.ts';
import { tsdbBases, type Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { openAnalytics, type AnalyticsStore } from './analytics.ts';
import {
  AnalyticsOwnershipError,
  NOT_OWNER_MESSAGE,
  runsInvoiceDomain,
  usesEmbeddedAnalytics,
} from './analytics-owner.ts';
import { DEFAULT_KEY_PREFIX, openKv, redactCredentials, type KvOptions, type KvReader, type KvStore } from './kv.ts';
import { openNearCache, type NearCache } from './kv-near-cache.ts';
import { openOrm } from './postgres.ts';
import { Tsdb } from './tsdb.ts';

/** A store the process cannot work without is unreachable; the message names the variable that points at it. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/** The stores of one process, each opened on first use and closed once at shutdown. */
export class Stores {
  private ormP: Promise<MikroORM> | undefined;
  private kvP: Promise<KvStore> | undefined;
  private nearP: Promise<NearCache> | undefined;
  private analyticsP: Promise<AnalyticsStore> | undefined;
  private tsdbV: Tsdb | undefined;

  private readonly config: Config;
  private readonly log: Logger;
  private readonly kvOptions: KvOptions;
  constructor(config: Config, log: Logger, kvOptions: KvOptions = {}) {
    this.config = config;
    this.log = log;
    this.kvOptions = kvOptions;
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
        entities: allEntities,
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
  /**
   * The analytics store. chDB lives in one process only (it locks its directory): a process that does not run the
   * invoice domain is refused here, so a gateway or another domain never takes the lock by accident.
   */
  analytics(): Promise<AnalyticsStore> {
    if (usesEmbeddedAnalytics(this.config) && !runsInvoiceDomain(this.config))
      return Promise.reject(new AnalyticsOwnershipError(NOT_OWNER_MESSAGE));
    this.analyticsP ??= openAnalytics(this.config);
    return this.analyticsP;
  }
  /** The metrics store: imports to the write base, queries to the read base (tsdbBases). */
  tsdb(): Tsdb {
    this.tsdbV ??= new Tsdb(tsdbBases(this.config));
    return this.tsdbV;
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
      settle(this.analyticsP, (a) => a.close()),
    ]);
  }
}
