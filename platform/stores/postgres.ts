import {
  EntityManager,
  MikroORM,
  type AnyEntity,
  type EntityClass,
  type EntitySchema,
  type LogContext,
  type Logger as OrmLogger,
  type LoggerNamespace,
  type MigrationObject,
  type TransactionOptions,
} from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { Pool, PoolClient } from 'pg';
import { DomainError } from '../../contracts/errors.ts';
import { currentDeadline, type DeadlineScope } from '../deadline.ts';
import type { Logger } from '../logger.ts';
import { isTransactionRace } from '../store-errors.ts';

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
  /** Migration list for `orm.migrator` (migrations/postgres: the composition roots pass it); none by default. */
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
    // Merged into the `pg` Pool config: fail fast instead of queueing forever when the server is unreachable (this
    // bounds both a new connection's handshake and the wait for a pooled one; inside a request, its deadline does).
    driverOptions: {
      connectionTimeoutMillis: 5_000,
      application_name: opts.applicationName ?? 'svc',
      onPoolCreated: guardPool,
    },
    // Every `em.transactional` (forks included) gets the request's statement timeout and race retries.
    entityManager: DeadlineEntityManager,
    extensions: [Migrator],
    migrations: {
      // Explicit class list: no filesystem glob (works the same under type stripping and in bundles).
      migrationsList: [...(opts.migrations ?? [])],
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

/** Statements of a request must end this long before its deadline, so the actor can still answer (504, not silence). */
const STATEMENT_MARGIN_MS = 150;
/** A pooled connection still held this long before the deadline is cut (a frozen server never answers). */
const CONNECTION_MARGIN_MS = 50;
/** Attempts of a transaction that lost a race (serialization failure 40001, deadlock 40P01); then 409. */
export const TRANSACTION_ATTEMPTS = 3;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The project's EntityManager: `transactional` (outermost level only; nested ones run inside the outer attempt)
 * - sets `SET LOCAL statement_timeout` to what is left of the request deadline, so the server itself stops a
 *   statement the caller no longer waits for (a deadline already passed is a 504 before anything starts);
 * - runs the callback again, up to TRANSACTION_ATTEMPTS times with a short jittered pause, when it lost a race
 *   (40001/40P01) and time is left; the last failure goes up and the runtime answers it 409. Callbacks must therefore
 *   only touch the database (or be safe to repeat).
 */
export class DeadlineEntityManager extends EntityManager {
  override async transactional<T>(cb: (em: this) => T | Promise<T>, options?: TransactionOptions): Promise<T> {
    if (this.isInTransaction() || options?.ctx) return super.transactional(cb, options);
    for (let attempt = 1; ; attempt++) {
      try {
        return await super.transactional(async (em) => {
          await applyStatementTimeout(em);
          return cb(em);
        }, options);
      } catch (err) {
        const scope = currentDeadline();
        const pause = 10 * attempt + Math.random() * 20 * attempt;
        if (
          !isTransactionRace(err) ||
          attempt >= TRANSACTION_ATTEMPTS ||
          (scope && scope.deadline - Date.now() < pause + STATEMENT_MARGIN_MS * 2)
        )
          throw err;
        await sleep(pause);
      }
    }
  }
}

async function applyStatementTimeout(em: EntityManager): Promise<void> {
  const scope = currentDeadline();
  if (!scope) return;
  const ms = Math.floor(scope.deadline - Date.now() - STATEMENT_MARGIN_MS);
  if (ms <= 0) throw new DomainError('timeout', 'the deadline passed before the transaction started');
  // SET takes no bind parameters; `ms` is an integer computed here. LOCAL: gone at commit or rollback.
  await em.execute(`SET LOCAL statement_timeout = ${ms}`);
}

/**
 * Inside a request, the pool's `connect` waits no longer than the deadline allows, and a connection still checked out
 * just before the deadline has its socket destroyed: with a frozen server, statement_timeout never fires and the
 * query would otherwise hold the connection until the server answers. pg then fails the query ("Connection
 * terminated", answered 503) and the pool discards the client on release, so a frozen store cannot exhaust the pool
 * for the requests that come after it thaws.
 * Every checkout (in requests or not) is also handed back to the pool, as failed, the moment its connection ends:
 * kysely releases nothing when BEGIN, COMMIT or ROLLBACK itself fails (its controlled transactions skip the release
 * on that path), so a connection that died mid-transaction stayed checked out for good and the pool shrank by one.
 */
export function guardPool(pool: Pool): void {
  const connect = pool.connect.bind(pool) as () => Promise<PoolClient>;
  const guarded = async (): Promise<PoolClient> => {
    const scope = currentDeadline();
    if (!scope) return guardCheckout(await connect());
    const budget = scope.deadline - Date.now() - STATEMENT_MARGIN_MS;
    if (budget <= 0) throw new Error('timeout exceeded when trying to connect: the request deadline passed');
    const pending = connect();
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // The pool may still hand a connection to this waiter later: give it straight back.
        pending.then(
          (c) => c.release(),
          () => undefined,
        );
        reject(new Error('timeout exceeded when trying to connect: no pooled connection before the request deadline'));
      }, budget);
    });
    try {
      return guardCheckout(await Promise.race([pending, gaveUp]), scope);
    } finally {
      clearTimeout(timer);
    }
  };
  // kysely calls `connect()` without a callback; the callback form is left as pg implements it.
  pool.connect = ((...args: unknown[]) =>
    args.length > 0 ? (connect as (...a: unknown[]) => unknown)(...args) : guarded()) as Pool['connect'];
}

/**
 * One checkout: released at most once (later releases are no-ops), released as failed as soon as its connection ends,
 * and, inside a request, its socket destroyed just before the deadline if it is still checked out (which ends it).
 */
function guardCheckout(client: PoolClient, scope?: DeadlineScope): PoolClient {
  // pg-pool installs a fresh `release` at every checkout, so this wrapper lives exactly as long as this checkout.
  const release = client.release.bind(client);
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  const onEnd = (): void => done(new Error('connection ended while checked out'));
  const done = (err?: Error | boolean): void => {
    if (released) return;
    released = true;
    clearTimeout(timer);
    client.removeListener('end', onEnd);
    release(err);
  };
  client.once('end', onEnd);
  if (scope) {
    timer = setTimeout(
      () => {
        // pg keeps its socket on `connection.stream` (typed on Client, not on PoolClient).
        (client as PoolClient & { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      },
      Math.max(0, scope.deadline - Date.now() - CONNECTION_MARGIN_MS),
    );
    timer.unref();
  }
  client.release = done;
  return client;
}

/** Routes MikroORM's own logging into pino instead of stdout. */
class PinoOrmLogger implements OrmLogger {
  private debugMode: LoggerNamespace[] | boolean;
  private readonly pino: Logger | undefined;
  constructor(pino: Logger | undefined, debugMode: boolean | LoggerNamespace[] = false) {
    this.pino = pino;
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
    const fields = {
      orm: namespace,
      sql: context.query,
      params,
      took_ms: context.took,
      results: context.results,
      affected: context.affected,
    };
    if (slow) this.pino?.warn(fields, 'slow sql');
    else this.pino?.debug(fields, 'sql');
  }
}
