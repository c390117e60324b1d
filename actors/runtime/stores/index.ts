import type { MikroORM } from '@mikro-orm/postgresql';
import { allEntities } from '../../entities.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { openAnalytics, type AnalyticsStore } from './analytics.ts';
import { openKv, type KvOptions, type KvStore } from './kv.ts';
import { openOrm } from './postgres.ts';
import { Tsdb } from './tsdb.ts';

/** The stores of one process, each opened on first use and closed once at shutdown. */
export class Stores {
  private ormP: Promise<MikroORM> | undefined;
  private kvP: Promise<KvStore> | undefined;
  private analyticsP: Promise<AnalyticsStore> | undefined;
  private tsdbV: Tsdb | undefined;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly kvOptions: KvOptions = {},
  ) {}

  orm(): Promise<MikroORM> {
    this.ormP ??= openOrm({ url: this.config.SVC_DB_URL, entities: allEntities, log: this.log.child({ store: 'postgres' }), applicationName: 'svc' });
    return this.ormP;
  }
  kv(): Promise<KvStore> {
    this.kvP ??= openKv(this.config, this.log.child({ store: 'kv' }), this.kvOptions);
    return this.kvP;
  }
  analytics(): Promise<AnalyticsStore> {
    this.analyticsP ??= openAnalytics(this.config);
    return this.analyticsP;
  }
  tsdb(): Tsdb {
    this.tsdbV ??= new Tsdb(this.config.SVC_TSDB_URL);
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
    await Promise.all([settle(this.ormP, (o) => o.close()), settle(this.kvP, (k) => k.close()), settle(this.analyticsP, (a) => a.close())]);
  }
}
