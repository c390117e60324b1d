import './thread-pool-size.ts';
import { readFile } from 'node:fs/promises';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { createLogger, type Logger } from '../platform/logger.ts';
import { errMessage } from './connection.ts';
import { EnrollError, enrollAgent } from './enroll.ts';
import { startAgent } from './runner.ts';
import { enrollSimulated, runSimulated, type SimulatedFleet } from './simulate/fleet.ts';
import { NotEnrolledError } from './state.ts';
import { AGENT_VERSION } from './version.ts';

/** `npm run agent -- <enroll|run> …`: the reference agent's command line (docs/api/fleet.md → The reference agent). */

/** Where an installed agent keeps its identity and credentials (the systemd unit's StateDirectory). */
export const DEFAULT_STATE_DIR = '/var/lib/svc-agent';

const USAGE = `Usage (svc-agent, or npm run agent -- in a checkout):
  svc-agent enroll --server <console URL> --token <install token> [--ca-file <pem>] [--state-dir <dir>] [--label key=value ...] [--hostname <name>]
  svc-agent enroll --simulate <N> --server <console URL> --tokens-file <file> --state-dir <dir> [--label key=value ...]
  svc-agent run [--state-dir <dir>] [--interval <seconds>] [--inventory-interval <seconds>] [--simulate <N>]
  svc-agent --version

Options:
  --server <url>               console base URL, e.g. http://127.0.0.1:8080
  --token <token>              one-time install token
  --tokens-file <file>         with --simulate: one install token per line, agent i uses line i
  --ca-file <pem>              also trust this CA (PEM) for the console's HTTPS certificate (a private CA)
  --state-dir <dir>            where agent.json, agent.creds and config/ live (created with mode 700;
                               default ${DEFAULT_STATE_DIR})
  --label key=value            label saved in agent.json and sent with every inventory snapshot (repeatable)
  --hostname <name>            hostname to enrol with (default: this machine's)
  --interval <seconds>         heartbeat and metrics period (default 10)
  --inventory-interval <s>     inventory snapshot period (default 300)
  --simulate <N>               N synthetic agents (sim-1 … sim-N under --state-dir) from one process
  --log-level <level>          pino level (default: SVC_LOG_LEVEL or info); logs go to stderr as JSON lines
  -h, --help                   this text
  -v, --version                the agent's version`;

const OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  'tokens-file': { type: 'string' },
  'state-dir': { type: 'string' },
  'ca-file': { type: 'string' },
  label: { type: 'string', multiple: true },
  hostname: { type: 'string' },
  interval: { type: 'string' },
  'inventory-interval': { type: 'string' },
  simulate: { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type OptionName = keyof typeof OPTIONS;
const ALLOWED: Record<'enroll' | 'run', readonly OptionName[]> = {
  enroll: [
    'server',
    'token',
    'tokens-file',
    'state-dir',
    'ca-file',
    'label',
    'hostname',
    'simulate',
    'log-level',
    'help',
  ],
  run: ['state-dir', 'interval', 'inventory-interval', 'simulate', 'log-level', 'help'],
};

class UsageError extends Error {}

/** Written before the process exits: a pipe would otherwise lose what `process.exit` cut short. */
const out = (text: string): Promise<void> => new Promise((resolve) => process.stdout.write(text, () => resolve()));

function seconds(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback * 1000;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0.1 || n > 86_400)
    throw new UsageError(`--${name} must be a number of seconds between 0.1 and 86400 (got ${JSON.stringify(raw)})`);
  return Math.round(n * 1000);
}

function count(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 100_000)
    throw new UsageError(`--simulate must be a whole number from 1 to 100000 (got ${JSON.stringify(raw)})`);
  return n;
}

function labels(raw: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of raw ?? []) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--label must be key=value (got ${JSON.stringify(item)})`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

function required(values: Record<string, unknown>, name: OptionName): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** Stops `stop` on the first SIGTERM/SIGINT; a second one exits at once. */
function onSignal(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn({ signal }, 'second signal; exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'stopping');
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: errMessage(err) }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** The state directory: --state-dir, else the installed agent's. The simulator has no default (one dir per fleet). */
function stateDirOf(values: Record<string, unknown>): string {
  if (values.simulate !== undefined) return required(values, 'state-dir');
  const v = values['state-dir'];
  if (v === '') throw new UsageError('--state-dir must not be empty');
  return typeof v === 'string' ? v : DEFAULT_STATE_DIR;
}

/** --ca-file: the console's HTTPS is also trusted when its certificate chains to this CA (beside the usual roots). */
async function trustCaFile(file: string): Promise<void> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --ca-file ${file}: ${errMessage(err)}`);
  }
  const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!certs) throw new UsageError(`--ca-file ${file} holds no PEM certificate`);
  try {
    setDefaultCACertificates([...getCACertificates('default'), ...certs]);
  } catch (err) {
    throw new UsageError(`--ca-file ${file}: ${errMessage(err)}`);
  }
}

async function enroll(values: Record<string, unknown>, log: Logger): Promise<void> {
  const server = required(values, 'server');
  const stateDir = stateDirOf(values);
  if (typeof values['ca-file'] === 'string') await trustCaFile(values['ca-file']);
  const sim = count(values.simulate as string | undefined);
  const extraLabels = labels(values.label as string[] | undefined);
  if (sim !== undefined) {
    if (values.token !== undefined || values.hostname !== undefined)
      throw new UsageError('with --simulate, give --tokens-file (one token per line), not --token or --hostname');
    const file = required(values, 'tokens-file');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read --tokens-file ${file}: ${errMessage(err)}`);
    }
    const tokens = text
      .split(/\r?\n/)
      .map((t) => t.trim())
      .filter((t) => t && !t.startsWith('#'));
    const result = await enrollSimulated({ server, tokens, stateDir, count: sim, labels: extraLabels, log });
    await out(`${JSON.stringify(result)}\n`);
    if (result.failed.length > 0) {
      process.stderr.write(
        `${result.failed.length} of ${sim} simulated agents could not be enrolled (first: sim-${result.failed[0]!.index}: ${result.failed[0]!.message})\n`,
      );
      process.exitCode = 1;
    }
    return;
  }
  if (values['tokens-file'] !== undefined) throw new UsageError('--tokens-file goes with --simulate');
  const result = await enrollAgent({
    server,
    token: required(values, 'token'),
    stateDir,
    labels: extraLabels,
    hostname: values.hostname as string | undefined,
  });
  await out(`${JSON.stringify(result)}\n`);
}

async function run(values: Record<string, unknown>, log: Logger): Promise<void> {
  const stateDir = stateDirOf(values);
  const intervalMs = seconds('interval', values.interval as string | undefined, 10);
  const inventoryIntervalMs = seconds('inventory-interval', values['inventory-interval'] as string | undefined, 300);
  const sim = count(values.simulate as string | undefined);
  if (sim !== undefined) {
    const abort = new AbortController();
    const running: { fleet?: SimulatedFleet } = {};
    onSignal(log, async () => {
      abort.abort();
      await running.fleet?.stop(5_000);
    });
    running.fleet = await runSimulated({
      stateDir,
      count: sim,
      intervalMs,
      inventoryIntervalMs,
      log,
      signal: abort.signal,
    });
    // A signal during the ramp stopped only what had started by then.
    if (abort.signal.aborted) await running.fleet.stop(5_000);
    return;
  }
  const agent = await startAgent({ stateDir, intervalMs, inventoryIntervalMs, log });
  onSignal(log, async () => {
    await agent.stop(5_000);
  });
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '-v' || command === '--version' || command === 'version') {
    await out(`${AGENT_VERSION}\n`);
    return 0;
  }
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    await out(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'enroll' && command !== 'run') {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${USAGE}\n`);
    return 2;
  }
  let values: Record<string, unknown>;
  try {
    const parsed = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: false });
    values = parsed.values;
    for (const name of Object.keys(values) as OptionName[])
      if (!ALLOWED[command].includes(name)) throw new UsageError(`--${name} does not apply to ${command}`);
  } catch (err) {
    process.stderr.write(`${errMessage(err)}\n\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    await out(`${USAGE}\n`);
    return 0;
  }
  const level = (values['log-level'] as string | undefined) ?? process.env.SVC_LOG_LEVEL ?? 'info';
  if (level !== 'silent' && !(level in pino.levels.values)) {
    process.stderr.write(
      `--log-level must be one of ${[...Object.keys(pino.levels.values), 'silent'].join(', ')} (got ${JSON.stringify(level)})\n`,
    );
    return 2;
  }
  const log = createLogger(level, 'agent', pino.destination(2));
  try {
    if (command === 'enroll') await enroll(values, log);
    else await run(values, log);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    // What the server or the files said, plainly: this is what an operator reads.
    const detail = err instanceof EnrollError && err.requestId ? ` (request ${err.requestId})` : '';
    process.stderr.write(`agent ${command} failed: ${errMessage(err)}${detail}\n`);
    if (!(err instanceof EnrollError || err instanceof NotEnrolledError)) log.debug({ err }, 'failure detail');
    return 1;
  }
}

// No top-level await: the packaged executable (Node's single-executable applications) runs a CommonJS bundle of this file.
void main(process.argv.slice(2)).then((code) => {
  // `run` keeps going (timers and the connection hold the process); everything else ends here.
  if (code !== 0 || process.argv[2] !== 'run') process.exit(code);
});
