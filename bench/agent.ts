// The agent part of `npm run bench` (`npm run bench -- agent`): the packaged agent (`npm run agent:package`'s
// executable) and the unbundled one (`npm run agent`, i.e. `node agent/main.ts`) enrolled against one system and run
// side by side on this host; their resident memory after BENCH_AGENT_SECONDS (60) of steady work, per round.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fsyncSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { memoryMiB } from './proc.ts';
import { join, resolve } from 'node:path';
import { buildSingleExecutable, packageAgent } from '../scripts/agent-package.ts';
import type { Stores } from '../platform/stores/index.ts';
import { benchInstallTokens, freshBenchClient } from './fixtures.ts';
import { spread, type Spread } from './stats.ts';

export const AGENT_BENCH_PORT = 18084;
const WORK = 'data/bench/agent';

export interface AgentBenchDeps {
  stores: Stores;
  rounds: number;
  start: (args: string[], env: Record<string, string>, readyUrl: string) => Promise<ChildProcess>;
  env: Record<string, string>;
}

/** Whether the executables' pages were dropped from the page cache before the agents started (see agentBench). */
type Cache = 'cold' | 'fresh';

export interface RssFigures {
  /** Resident memory after `seconds` of `run`, MiB. */
  packagedRssMiB: Spread;
  unbundledRssMiB: Spread;
  /** packaged / unbundled per round (both ran at the same time). */
  ratio: Spread;
  /** The packaged agent's RSS split: anonymous (heaps, stacks) and file-backed (the executable's own pages). */
  packagedAnonMiB: Spread;
  packagedFileMiB: Spread;
  /** A single executable built the same way that only connects (TLS, the agent's credentials) and pings every 10 s. */
  floorRssMiB: Spread;
  floorFileMiB: Spread;
  /** packaged / floor per round. */
  toFloor: Spread;
}

export interface AgentFigures {
  seconds: number;
  executableMiB: number;
  debMiB: number;
  cold: RssFigures;
  fresh: RssFigures;
}

/** VmRSS, RssAnon and RssFile of a process, MiB. */
function memory(pid: number): { rss: number; anon: number; file: number } {
  const m = memoryMiB(pid);
  if (!m) throw new Error(`process ${pid} has ended`);
  return m;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs a command to completion; rejects with its stderr when it fails. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code) =>
      code === 0 ? done() : fail(new Error(`${cmd} ${args[0]} exited with ${code}: ${err.slice(-500)}`)),
    );
  });
}

export async function agentBench(deps: AgentBenchDeps): Promise<AgentFigures> {
  const seconds = Number(process.env.BENCH_AGENT_SECONDS ?? 60);
  const base = `http://127.0.0.1:${AGENT_BENCH_PORT}`;
  await deps.start(
    ['main.ts'],
    { ...deps.env, SVC_SERVER_PORT: String(AGENT_BENCH_PORT), SVC_GATEWAYS: 'console', SVC_ACTORS: 'identity,fleet' },
    `${base}/readyz`,
  );
  rmSync(WORK, { recursive: true, force: true });
  const built = await packageAgent(resolve(WORK, 'dist'));
  const floorExecutable = resolve(WORK, 'floor');
  await buildSingleExecutable(resolve('bench/agent-floor.ts'), floorExecutable, resolve(WORK, 'floor-build'));

  const conn = (await deps.stores.orm()).em.fork().getConnection();
  const where = await freshBenchClient(conn, 'bench-agent', 'Bench agent');
  const token = async (): Promise<string> => (await benchInstallTokens(conn, where, 1))[0]!;

  // Each agent runs as it is started for real: no NODE_OPTIONS of the bench's, logs at info; the packaged one with
  // the environment its systemd unit sets, `npm run agent` with none.
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', SVC_LOG_LEVEL: 'info' };
  const unit = readFileSync('agent/package/svc-agent.service', 'utf8');
  const unitEnv = Object.fromEntries([...unit.matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
  const unitPre = [...unit.matchAll(/^ExecStartPre=-?(.*)$/gm)].map((m) => m[1]!);
  let packagedExecutable = built.executable;
  const shapes = {
    packaged: (args: string[]): [string, string[], NodeJS.ProcessEnv] => [
      packagedExecutable,
      args,
      { ...env, ...unitEnv },
    ],
    unbundled: (args: string[]): [string, string[], NodeJS.ProcessEnv] => [
      process.execPath,
      ['agent/main.ts', ...args],
      env,
    ],
  };
  type Reading = ReturnType<typeof memory>;
  type Row = { packaged: Reading; unbundled: Reading; floor: Reading };
  const rows: Record<Cache, Row[]> = { cold: [], fresh: [] };
  for (let r = 0; r < deps.rounds; r++) {
    for (const cache of ['cold', 'fresh'] as const) {
      // RSS counts every page of an executable that is mapped, and on a fault the kernel also maps the neighbouring
      // pages that are already in the page cache. "cold": only what runs gets cached (after a reboot, or once memory
      // pressure has evicted the rest), made here by dropping the executables' cached pages (dd's nocache; pages that
      // a running process maps, such as node's for the system under test, stay). "fresh": a copy written just
      // before it starts, all of it in the page cache, as right after `dpkg -i`, then started as the unit starts it.
      const exe: Record<'packaged' | 'floor', string> = { packaged: built.executable, floor: floorExecutable };
      for (const [name, file] of Object.entries(exe) as ['packaged' | 'floor', string][]) {
        if (cache === 'fresh') {
          exe[name] = `${file}-fresh`;
          // Written through write() and synced, as dpkg unpacks (copyFileSync's copy_file_range would bypass the page
          // cache).
          rmSync(exe[name], { force: true });
          const fd = openSync(exe[name], 'w', 0o755);
          writeFileSync(fd, readFileSync(file));
          fsyncSync(fd);
          closeSync(fd);
        }
      }
      packagedExecutable = exe.packaged;
      const running: Record<string, ChildProcess> = {};
      for (const [name, shape] of Object.entries(shapes)) {
        const dir = join(WORK, `${name}-${r}-${cache}`);
        await run(
          ...shape([
            'enroll',
            '--server',
            base,
            '--token',
            await token(),
            '--state-dir',
            dir,
            '--hostname',
            `${name}-${r}-${cache}`,
          ]),
        );
        // Enrolment ran the executable: its pages are cached again.
        if (cache === 'cold')
          for (const file of [exe.packaged, exe.floor, process.execPath])
            await run('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none'], env);
        // Started as its unit starts it: the unit's ExecStartPre commands first, for the packaged agent and the floor.
        if (cache === 'fresh' && name === 'packaged')
          for (const file of [exe.packaged, exe.floor])
            for (const pre of unitPre) {
              const [cmd, ...args] = pre.replaceAll('/usr/bin/svc-agent', file).split(' ');
              await run(cmd!, args, env);
            }
        const [cmd, args, runEnv] = shape(['run', '--state-dir', dir]);
        running[name] = spawn(cmd, args, { env: runEnv, stdio: ['ignore', 'ignore', 'ignore'] });
        // The floor borrows the packaged agent's identity (a second connection with the same credentials).
        if (name === 'packaged')
          running.floor = spawn(exe.floor, [dir], {
            env: { ...env, ...unitEnv },
            stdio: ['ignore', 'ignore', 'ignore'],
          });
      }
      await sleep(seconds * 1000);
      const exited = Object.entries(running).filter(([, c]) => c.exitCode !== null);
      if (exited.length > 0)
        throw new Error(`agent(s) ${exited.map(([n]) => n).join(', ')} exited before the reading (${cache})`);
      const row: Row = {
        packaged: memory(running.packaged!.pid!),
        unbundled: memory(running.unbundled!.pid!),
        floor: memory(running.floor!.pid!),
      };
      rows[cache].push(row);
      for (const c of Object.values(running)) c.kill('SIGTERM');
      await sleep(1000);
      console.log(
        `  round ${r + 1}, ${cache} page cache: packaged ${row.packaged.rss.toFixed(1)} MiB, unbundled ${row.unbundled.rss.toFixed(1)} MiB, floor ${row.floor.rss.toFixed(1)} MiB`,
      );
    }
  }
  await conn.execute(`DELETE FROM clients WHERE id = ?`, [where.clientId]);

  const figuresOf = (list: Row[]): RssFigures => ({
    packagedRssMiB: spread(list.map((r) => r.packaged.rss)),
    unbundledRssMiB: spread(list.map((r) => r.unbundled.rss)),
    ratio: spread(list.map((r) => r.packaged.rss / r.unbundled.rss)),
    packagedAnonMiB: spread(list.map((r) => r.packaged.anon)),
    packagedFileMiB: spread(list.map((r) => r.packaged.file)),
    floorRssMiB: spread(list.map((r) => r.floor.rss)),
    floorFileMiB: spread(list.map((r) => r.floor.file)),
    toFloor: spread(list.map((r) => r.packaged.rss / r.floor.rss)),
  });
  const figures: AgentFigures = {
    seconds,
    executableMiB: statSync(built.executable).size / 1048576,
    debMiB: statSync(built.deb).size / 1048576,
    cold: figuresOf(rows.cold),
    fresh: figuresOf(rows.fresh),
  };
  return figures;
}
