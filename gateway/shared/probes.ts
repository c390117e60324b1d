import pg from 'pg';

/** A one-connection pool used only to answer readiness probes, so a probe never waits behind application queries. */
export class PostgresProbe {
  private readonly pool: pg.Pool;
  constructor(url: string) {
    this.pool = new pg.Pool({
      connectionString: url,
      max: 1,
      connectionTimeoutMillis: 1500,
      idleTimeoutMillis: 30_000,
      statement_timeout: 1500,
    });
    this.pool.on('error', () => undefined); // a dropped idle connection is reported by the next check
  }
  /** `"ok"`, or a short failure text. */
  async check(): Promise<string> {
    try {
      await this.pool.query('SELECT 1');
      return 'ok';
    } catch (err) {
      return `unreachable: ${err instanceof Error ? err.message || err.name : String(err)}`;
    }
  }
  async close(): Promise<void> {
    await this.pool.end();
  }
}

export const withTimeout = <T>(p: Promise<T>, ms: number, onTimeout: T): Promise<T> =>
  Promise.race([p, new Promise<T>((resolve) => setTimeout(() => resolve(onTimeout), ms).unref())]);
