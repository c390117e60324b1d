import { execFileSync } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../platform/logger.ts';
import { errMessage } from '../connection.ts';
import { EnrollError, enrollAgent } from '../enroll.ts';
import { startAgent, type AgentStats, type RunningAgent, type StartAgentOptions } from '../runner.ts';
import { statePaths } from '../state.ts';
import { createSyntheticCollector, createSyntheticWatcher } from './synthetic.ts';

/**
 * Many synthetic agents from one process (`--simulate N`), for benchmarks and demos: agent i (1-based) lives in
 * `<state-dir>/sim-<i>/`, reports as host `sim-<i>` with the synthetic collector, and has its own NATS connection and
 * credentials, exactly like a real agent; starts are staggered so a fleet does not arrive in one burst.
 */

export const simDir = (stateDir: string, index: number): string => join(stateDir, `sim-${index}`);

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

export interface SimEnrollOptions {
  server: string;
  /** One install token per agent, in order: agent i uses tokens[i - 1]. */
  tokens: string[];
  stateDir: string;
  count: number;
  /** Enrolments at once (default 8). */
  concurrency?: number;
  labels?: Record<string, string>;
  log: Logger;
}

export interface SimEnrollResult {
  enrolled: number;
  /** Already enrolled (their directory has agent.json): left as they are, so an interrupted run can be resumed. */
  skipped: number;
  failed: { index: number; message: string }[];
}

export async function enrollSimulated(opts: SimEnrollOptions): Promise<SimEnrollResult> {
  if (opts.tokens.length < opts.count)
    throw new EnrollError(
      `--simulate ${opts.count} needs ${opts.count} install tokens; the tokens file has ${opts.tokens.length}`,
    );
  const result: SimEnrollResult = { enrolled: 0, skipped: 0, failed: [] };
  let next = 1;
  const worker = async (): Promise<void> => {
    for (let i = next++; i <= opts.count; i = next++) {
      const dir = simDir(opts.stateDir, i);
      if (await exists(statePaths(dir).agent)) {
        result.skipped++;
        continue;
      }
      try {
        await enrollAgent({
          server: opts.server,
          token: opts.tokens[i - 1]!,
          stateDir: dir,
          hostname: `sim-${i}`,
          os: 'linux',
          arch: 'x86_64',
          labels: { simulated: 'true', ...opts.labels },
        });
        result.enrolled++;
      } catch (err) {
        result.failed.push({ index: i, message: errMessage(err) ?? 'failed' });
        opts.log.warn({ sim: i, err: errMessage(err) }, 'simulated agent not enrolled');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 8, opts.count)) }, worker));
  return result;
}

export interface SimRunOptions {
  stateDir: string;
  count: number;
  intervalMs?: number;
  inventoryIntervalMs?: number;
  /** Between two agents' starts; default spreads the fleet over one interval (at most 20 ms apart). */
  staggerMs?: number;
  /** Period of the fleet summary log line (default 60 s; 0: none). */
  summaryEveryMs?: number;
  log: Logger;
  /** Anything else for every agent (timeouts, outbox bounds). */
  agentOptions?: Partial<StartAgentOptions>;
  /** Stops starting more agents (SIGTERM during the ramp); those started are returned. */
  signal?: AbortSignal;
}

export interface FleetSummary {
  agents: number;
  connected: number;
  pending: number;
  stored: number;
  dropped: number;
  send_failures: number;
  collect_errors: number;
}

export interface SimulatedFleet {
  readonly agents: readonly RunningAgent[];
  summary(): FleetSummary;
  stop(timeoutMs?: number): Promise<void>;
}

function summarize(stats: AgentStats[]): FleetSummary {
  const s: FleetSummary = {
    agents: stats.length,
    connected: 0,
    pending: 0,
    stored: 0,
    dropped: 0,
    send_failures: 0,
    collect_errors: 0,
  };
  for (const a of stats) {
    if (a.connected) s.connected++;
    s.pending += a.outbox.pending;
    s.send_failures += a.outbox.sendFailures;
    s.collect_errors += a.collect_errors;
    for (const k of Object.values(a.outbox.kinds)) {
      s.stored += k.stored;
      s.dropped += k.dropped;
    }
  }
  return s;
}

/** The soft limit of open files, when the shell can tell (one socket per agent, plus the process's own). */
function openFileLimit(): number | undefined {
  try {
    const out = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
    return out === 'unlimited' ? Infinity : Number.parseInt(out, 10) || undefined;
  } catch {
    return undefined;
  }
}

export async function runSimulated(opts: SimRunOptions): Promise<SimulatedFleet> {
  const { log } = opts;
  const missing: number[] = [];
  for (let i = 1; i <= opts.count; i++)
    if (!(await exists(statePaths(simDir(opts.stateDir, i)).agent))) missing.push(i);
  if (missing.length > 0) {
    throw new Error(
      `${missing.length} of ${opts.count} simulated agents are not enrolled (first: ${simDir(opts.stateDir, missing[0]!)}); run \`npm run agent -- enroll --simulate ${opts.count} --server <url> --tokens-file <file> --state-dir ${opts.stateDir}\``,
    );
  }
  const limit = openFileLimit();
  if (limit !== undefined && limit < opts.count + 64)
    log.warn(
      { open_files_limit: limit, agents: opts.count },
      'the open-files limit is close to the number of agents (one socket each); raise it with `ulimit -n`',
    );

  const intervalMs = opts.intervalMs ?? 10_000;
  const staggerMs = opts.staggerMs ?? Math.min(20, intervalMs / opts.count);
  const agents: RunningAgent[] = [];
  const began = Date.now();
  for (let i = 1; i <= opts.count && !opts.signal?.aborted; i++) {
    const collector = createSyntheticCollector(i);
    agents.push(
      await startAgent({
        validate: false,
        ...opts.agentOptions,
        stateDir: simDir(opts.stateDir, i),
        intervalMs,
        inventoryIntervalMs: opts.inventoryIntervalMs,
        // A running fleet's snapshots are spread over the interval (agents started at different times), not synchronized.
        firstInventoryDelayMs: Math.floor(((i - 1) / opts.count) * (opts.inventoryIntervalMs ?? 300_000)),
        collector,
        watcher: createSyntheticWatcher,
        // One agent's routine lines (connected, config applied) would be a thousand lines: the fleet logs summaries.
        log: log.child({ sim: i }, { level: log.isLevelEnabled('debug') ? log.level : 'warn' }),
      }),
    );
    const due = began + i * staggerMs;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
  }
  log.info({ agents: agents.length, ramp_ms: Date.now() - began }, 'simulated agents started');

  const summary = (): FleetSummary => summarize(agents.map((a) => a.stats()));
  const every = opts.summaryEveryMs ?? 60_000;
  const summaryTimer = every > 0 ? setInterval(() => log.info(summary(), 'simulated fleet'), every) : undefined;

  return {
    agents,
    summary,
    async stop(timeoutMs = 5_000): Promise<void> {
      if (summaryTimer) clearInterval(summaryTimer);
      const results = await Promise.allSettled(agents.map((a) => a.stop(timeoutMs)));
      const unflushed = results.filter((r) => r.status === 'rejected' || !r.value).length;
      for (const r of results)
        if (r.status === 'rejected') log.warn({ err: errMessage(r.reason) }, 'simulated agent did not stop cleanly');
      log.info({ ...summary(), unflushed }, 'simulated agents stopped');
    },
  };
}
