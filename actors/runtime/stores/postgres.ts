import { MikroORM, type AnyEntity, type EntityClass, type EntitySchema, type LogContext, type Logger as OrmLogger, type LoggerNamespace, type MigrationObject } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Logger } from '../logger.ts';
import { postgresMigrations } from '../../../migrations/postgres/index.ts';

export { MikroORM };
/** What `entities` accepts: `defineEntity(...)` results (preferred) or entity classes. */
export type EntityDef = EntityClass<AnyEntity> | EntitySchema;

export interface OpenOrmOptions {
  /** postgresql:// URL (config SVC_DB_URL). */
  url: string;
  /** The entities this process works with; domains pass their own `defineEntity` schemas. May be empty (migrations only). */
  entities?: readonly EntityDef[];
  /** Pino logger; SQL is logged at debug level only when that level is enabled. */
  log?: Logger;
  /** Upper bound of pooled connections per process; actors scale by process count, so keep it modest. */
  poolMax?: number;
  /** Shown in pg_stat_activity, so a DBA can tell which actor holds a connection. */
  applicationName?: string;
  /** Migration list for `orm.migrator`; defaults to the project's ordered list in migrations/postgres. */
  migrations?: readonly MigrationObject[];
}

/**
 * Opens MikroORM (v7, kysely-based) on PostgreSQL with the Migrator registered.
 *
 * The global `orm.em` refuses to be used (`allowGlobalContext: false`): every unit of work must start from
 * `orm.em.fork()`, so one request's identity map never leaks into another's.
 */
export async function openOrm(opts: OpenOrmOptions): Promise<MikroORM> {
  const orm = await MikroORM.init({
    clientUrl: opts.url,
    entities: [...(opts.entities ?? [])],
    // Entities may legitimately be empty (the migrate command); v7 otherwise throws at discovery.
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    // Never create databases implicitly: a wrong SVC_DB_URL should fail loudly, not make an empty database.
    ensureDatabase: false,
    pool: { min: 0, max: opts.poolMax ?? 10, idleTimeoutMillis: 30_000 },
    // Merged into the `pg` Pool config: fail fast instead of queueing forever when the server is unreachable.
    driverOptions: { connectionTimeoutMillis: 5_000, application_name: opts.applicationName ?? 'svc' },
    extensions: [Migrator],
    migrations: {
      // Explicit class list: no filesystem glob (works the same under tsx and in bundles).
      migrationsList: [...(opts.migrations ?? postgresMigrations)],
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      // Hand-written SQL migrations: no schema snapshot file should be written next to them on `up`.
      snapshot: false,
      snapshotOnMigrate: false,
      silent: true,
    },
    colors: false,
    debug: opts.log?.isLevelEnabled('debug') ? ['query', 'query-params', 'info'] : false,
    loggerFactory: (o) => new PinoOrmLogger(opts.log, o.debugMode),
  });
  return orm;
}

/** Routes MikroORM's own logging into pino instead of stdout. */
class PinoOrmLogger implements OrmLogger {
  private debugMode: LoggerNamespace[] | boolean;
  constructor(
    private readonly pino: Logger | undefined,
    debugMode: boolean | LoggerNamespace[] = false,
  ) {
    this.debugMode = debugMode;
  }
  isEnabled(namespace: LoggerNamespace, context?: LogContext): boolean {
    if (!this.pino) return false;
    if (context?.enabled !== undefined) return context.enabled;
    const mode = context?.debugMode ?? this.debugMode;
    return Array.isArray(mode) ? mode.includes(namespace) : mode;
  }
  setDebugMode(debugMode: boolean | LoggerNamespace[]): void {
    this.debugMode = debugMode;
  }
  log(namespace: string, message: string, context?: LogContext): void {
    if (!this.isEnabled(namespace as LoggerNamespace, context)) return;
    if (context?.level === 'error') this.pino?.error({ orm: namespace }, message);
    else if (context?.level === 'warning') this.pino?.warn({ orm: namespace }, message);
    else this.pino?.debug({ orm: namespace }, message);
  }
  error(namespace: string, message: string): void {
    this.pino?.error({ orm: namespace }, message);
  }
  warn(namespace: string, message: string): void {
    this.pino?.warn({ orm: namespace }, message);
  }
  logQuery(context: LogContext): void {
    const slow = context.namespace === 'slow-query';
    const namespace: LoggerNamespace = slow ? 'slow-query' : 'query';
    if (!this.isEnabled(namespace, context)) return;
    const params = this.isEnabled('query-params', { ...context, enabled: undefined }) ? context.params : undefined;
    const fields = { orm: namespace, sql: context.query, params, took_ms: context.took, results: context.results, affected: context.affected };
    if (slow) this.pino?.warn(fields, 'slow sql');
    else this.pino?.debug(fields, 'sql');
  }
}
