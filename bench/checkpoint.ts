/**
 * Writes out PostgreSQL's dirty pages now, so that a bulk load's write-back (spread by a checkpoint over minutes) does
 * not land in the requests a part measures. CHECKPOINT needs a superuser or pg_checkpoint: with a lesser
 * SVC_BENCH_DB_URL role the part runs without it, and says so.
 */
export async function checkpoint(execute: (sql: string) => Promise<unknown>): Promise<void> {
  await execute('CHECKPOINT').catch((err: unknown) => console.log(`bench: no CHECKPOINT (${String(err)})`));
}
