/**
 * The local NATS server of `npm start` / `npm test` (scripts/setup.sh runs this): creates the broker's trust chain
 * under data/nats once (platform/broker/trust.ts), writes the server configuration, and makes sure a
 * nats-server with that configuration listens on the address of SVC_NATS_URL (default 127.0.0.1:4223), started
 * detached with its data under data/nats. A server already there is kept when it accepts our service credentials;
 * one started from another checkout's data/nats (other keys) is stopped and replaced; anything else is an error.
 * The client port speaks TLS only: with the certificate and key an operator names in SVC_NATS_TLS_CERT and
 * SVC_NATS_TLS_KEY (and their CA in SVC_NATS_CA), else with a CA and server certificate made once under the same
 * directory (platform/broker/certificates.ts; --san adds names the certificate must cover).
 *
 *   node scripts/local-nats.ts [--dir data/nats] [--url nats://127.0.0.1:4223]
 *   node scripts/local-nats.ts --init-only --dir /nats [--san nats-1 --san nats-2]   keys, certificates, configuration
 *   node scripts/local-nats.ts --init-only --dir /nats --cluster nats-1,nats-2,nats-3
 *       also one configuration per node (nats-server-<node>.conf): server name, routes to the others on port 6222 over
 *       TLS with peer verification; the certificate then names every node (docker-compose's three-node broker)
 */
import { connect } from '@nats-io/transport-node';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { brokerAuth, brokerTls } from '../platform/nats.ts';
import { ensureBrokerCertificates, type BrokerTlsFiles } from '../platform/broker/certificates.ts';
import { ensureTrust, readTrust, serverConfig, TRUST_FILES } from '../platform/broker/trust.ts';

const { values } = parseArgs({
  options: {
    dir: { type: 'string', default: 'data/nats' },
    url: { type: 'string', default: 'nats://127.0.0.1:4223' },
    'init-only': { type: 'boolean', default: false },
    san: { type: 'string', multiple: true, default: [] },
    cluster: { type: 'string', default: '' },
  },
});
const dir = resolve(values.dir);
const url = new URL(values.url);
const host = url.hostname || '127.0.0.1';
const port = Number(url.port || 4222);
const creds = join(dir, TRUST_FILES.serviceCreds);
const say = (msg: string): void => void process.stderr.write(`[local-nats] ${msg}\n`);
const env = (name: string): string | undefined => process.env[name] || undefined;
const clusterNodes = (values.cluster ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const ROUTE_PORT = 6222;

/** One configuration per cluster node, beside the single-server one: same trust and TLS, its name and its routes. */
async function writeClusterConfigs(tlsFiles: BrokerTlsFiles): Promise<void> {
  const trust = await readTrust(dir);
  for (const node of clusterNodes) {
    const routes = clusterNodes.filter((n) => n !== node).map((n) => `nats-route://${n}:${ROUTE_PORT}`);
    const conf = serverConfig({
      ...trust,
      tls: tlsFiles,
      cluster: { cluster: 'svc', serverName: node, listen: `0.0.0.0:${ROUTE_PORT}`, routes },
    });
    writeFileSync(join(dir, `nats-server-${node}.conf`), conf, { mode: 0o600 });
  }
  say(`wrote the configurations of cluster nodes ${clusterNodes.join(', ')}`);
}

/** The operator's own certificate when both halves are named, else this directory's (made once, kept). */
function brokerCertificates(): BrokerTlsFiles {
  const cert = env('SVC_NATS_TLS_CERT');
  const key = env('SVC_NATS_TLS_KEY');
  if (cert || key) {
    if (!cert || !key)
      throw new Error(
        'set both SVC_NATS_TLS_CERT and SVC_NATS_TLS_KEY (the broker certificate and its key), or neither',
      );
    for (const f of [cert, key]) if (!existsSync(f)) throw new Error(`${f} does not exist`);
    const ca = env('SVC_NATS_CA');
    return { cert: resolve(cert), key: resolve(key), ...(ca ? { ca: resolve(ca) } : {}) };
  }
  const made = ensureBrokerCertificates(dir, [host, ...(values.san ?? []), ...clusterNodes]);
  if (made.issued) say(`issued the broker's TLS certificate (CA ${made.ca})`);
  return made;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Probe = 'ok' | 'refused' | 'closed';

function portOpen(): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });
}

async function connects(withCreds: boolean): Promise<boolean> {
  try {
    const nc = await connect({
      servers: `${host}:${port}`,
      ...(withCreds ? brokerAuth(creds) : {}),
      ...brokerTls(tls?.ca),
      reconnect: false,
      timeout: 2000,
    });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * ok: a server that accepts our service credentials and refuses anonymous clients; refused: something else listens
 * there (other keys, or a server without authentication); closed: nothing listens.
 */
async function probe(): Promise<Probe> {
  if (!(await portOpen())) return 'closed';
  return (await connects(true)) && !(await connects(false)) ? 'ok' : 'refused';
}

/** nats-server processes started from a `data/nats` directory (this project's, of any checkout) on our port. */
function staleServers(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!args[0]?.endsWith('nats-server') || args[args.indexOf('-p') + 1] !== String(port)) continue;
      // A checkout deleted while its server ran shows as `…/data/nats (deleted)`: that server is stale too.
      if (
        readlinkSync(`/proc/${entry}/cwd`)
          .replace(/ \(deleted\)$/, '')
          .endsWith('/data/nats')
      )
        found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

async function stop(pid: number): Promise<void> {
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50; i++) {
    await sleep(100);
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  process.kill(pid, 'SIGKILL');
}

let tls: BrokerTlsFiles | undefined;

async function main(): Promise<void> {
  tls = brokerCertificates();
  const trust = await ensureTrust(dir, { tls });
  if (trust.created) say(`created the broker's operator, accounts and service credentials in ${dir}`);
  if (clusterNodes.length > 0) await writeClusterConfigs(tls);
  if (values['init-only']) return;
  let state = await probe();
  // Our own server started from another configuration (a changed limit, or one started before this check existed)
  // is restarted with the current one.
  const conf = readFileSync(join(dir, TRUST_FILES.serverConfig), 'utf8');
  const started = join(dir, 'nats-server.conf.started');
  const pidFile = join(dir, 'nats-server.pid');
  if (state === 'ok' && existsSync(pidFile) && (!existsSync(started) || readFileSync(started, 'utf8') !== conf)) {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && staleServers().includes(pid)) {
      say(`restarting nats-server (pid ${pid}): its configuration changed`);
      await stop(pid);
      state = 'closed';
    }
  }
  if (state === 'refused') {
    const stale = staleServers();
    if (stale.length === 0)
      throw new Error(
        `${host}:${port} is taken by a server that refuses this checkout's credentials (${creds}); stop it or set SVC_NATS_URL`,
      );
    say(`stopping a nats-server of another checkout on ${host}:${port} (pid ${stale.join(', ')})`);
    for (const pid of stale) await stop(pid);
    state = 'closed';
  }
  if (state === 'closed') {
    const bin = existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server';
    say(`starting nats-server on ${host}:${port} (operator mode, JetStream, TLS, data and log in ${dir})`);
    // Detached in its own session: it outlives this script and a Ctrl-C of `npm start`, like the other local services.
    const child = spawn(
      bin,
      [
        '-c',
        TRUST_FILES.serverConfig,
        '-a',
        host,
        '-p',
        String(port),
        '-P',
        'nats-server.pid',
        '-l',
        'nats-server.log',
      ],
      {
        cwd: dir,
        detached: true,
        stdio: 'ignore',
      },
    );
    child.unref();
    writeFileSync(started, conf, { mode: 0o600 });
    for (let i = 0; i < 150 && (state = await probe()) !== 'ok'; i++) await sleep(200);
    if (state !== 'ok')
      throw new Error(
        `nats-server did not accept our credentials on ${host}:${port} within 30 s (see ${join(dir, 'nats-server.log')})`,
      );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    say(`ERROR: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
