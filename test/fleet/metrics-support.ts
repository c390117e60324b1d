import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { METRICS_DURABLE } from '../../actors/fleet/metrics/ingest.ts';
import { createLogger } from '../../platform/logger.ts';
import { wireDurableName } from '../../platform/namespace.ts';
import { connectNats } from '../../platform/nats.ts';
import { Tsdb } from '../../actors/fleet/metrics/tsdb.ts';
import type { MetricSample } from '../../contracts/domains/agent-telemetry.ts';
import { streams, telemetrySubject } from '../../contracts/streams.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';
import { freePort, waitFor } from '../support/processes.ts';
import type { TestSystem } from '../support/system.ts';

/**
 * Shared by the metric read tests: hosts and agents inserted as enrolment leaves them, samples fed through the real
 * ingest path (published on the agent's own telemetry subject into JetStream, stored by the system's consumer), and
 * VictoriaMetrics instances of a test's own when it needs other server flags.
 */

const encoder = new TextEncoder();

export interface SeededHost {
  client_id: string;
  environment_id: string;
  host_id: string;
  agent_id: string;
}

export class MetricsFixture {
  readonly clients: string[] = [];
  readonly hosts: string[] = [];
  private nc!: NatsConnection;
  private jsm!: JetStreamManager;
  tsdb!: Tsdb;

  private readonly sys: TestSystem;
  constructor(sys: TestSystem) {
    this.sys = sys;
  }

  async open(): Promise<this> {
    this.nc = await connectNats(NATS_URL, 'metrics-read-test', createLogger('silent'), NATS_CREDS, NATS_CA);
    this.jsm = await jetstreamManager(this.nc);
    this.tsdb = new Tsdb(this.sys.config.SVC_TSDB_URL);
    return this;
  }

  /** A client of its own (or `clientId`), an environment (or `environmentId`), and a host with an active agent. */
  async host(opts: { clientId?: string; environmentId?: string; hostname?: string } = {}): Promise<SeededHost> {
    const client_id = opts.clientId ?? randomUUID();
    const environment_id = opts.environmentId ?? randomUUID();
    const ref = { client_id, environment_id, host_id: randomUUID(), agent_id: randomUUID() };
    if (!opts.clientId) {
      this.clients.push(client_id);
      await this.sys.sql('INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)', [
        client_id,
        'Metrics read client',
        `mr-${client_id}`,
      ]);
    }
    if (!opts.environmentId)
      await this.sys.sql('INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)', [
        environment_id,
        client_id,
        'Prod',
        `prod-${environment_id.slice(0, 8)}`,
      ]);
    this.hosts.push(ref.host_id);
    const hostname = opts.hostname ?? `web-${ref.host_id.slice(0, 6)}`;
    await this.sys.sql(
      'INSERT INTO agents (id, client_id, environment_id, host_id, public_key, status, hostname) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [ref.agent_id, client_id, environment_id, ref.host_id, `key-${ref.agent_id}`, 'active', hostname],
    );
    await this.sys.sql('INSERT INTO hosts (id, environment_id, client_id, agent_id, hostname) VALUES (?, ?, ?, ?, ?)', [
      ref.host_id,
      environment_id,
      client_id,
      ref.agent_id,
      hostname,
    ]);
    return ref;
  }

  /**
   * Moves a host to a new environment of its client, as re-enrolment there leaves it: a new agent (so the ingest's
   * agent directory knows nothing cached about it) in the new environment; the old agent revoked.
   */
  async move(ref: SeededHost): Promise<SeededHost> {
    const moved = { ...ref, environment_id: randomUUID(), agent_id: randomUUID() };
    await this.sys.sql('INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)', [
      moved.environment_id,
      ref.client_id,
      'Staging',
      `stg-${moved.environment_id.slice(0, 8)}`,
    ]);
    await this.sys.sql(`UPDATE agents SET status = 'revoked' WHERE id = ?`, [ref.agent_id]);
    await this.sys.sql(
      'INSERT INTO agents (id, client_id, environment_id, host_id, public_key, status, hostname) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [moved.agent_id, ref.client_id, moved.environment_id, ref.host_id, `key-${moved.agent_id}`, 'active', 'moved'],
    );
    await this.sys.sql('UPDATE hosts SET environment_id = ?, agent_id = ? WHERE id = ?', [
      moved.environment_id,
      moved.agent_id,
      ref.host_id,
    ]);
    return moved;
  }

  /**
   * Publishes the samples as the agent would (MetricBatch on svc.agent.<id>.metrics, in batches of at most 5,000) and
   * waits until the system's consumer has stored them and they are searchable.
   */
  async feed(agentId: string, samples: MetricSample[]): Promise<void> {
    let last = 0;
    for (let i = 0; i < samples.length; i += 5_000) {
      const chunk = samples.slice(i, i + 5_000);
      const ack = await jetstream(this.nc).publish(
        telemetrySubject(agentId, 'metrics'),
        encoder.encode(
          JSON.stringify({ collected_at: new Date(chunk[0]!.time_ms ?? Date.now()).toISOString(), samples: chunk }),
        ),
      );
      last = ack.seq;
    }
    const durable = wireDurableName(METRICS_DURABLE);
    await waitFor(
      async () => (await this.jsm.consumers.info(streams.SVC_TELEMETRY.name, durable)).ack_floor.stream_seq >= last,
      20_000,
      `${durable} stored up to ${last}`,
      50,
    );
    await this.tsdb.flush();
  }

  /** Removes what this file created: its clients (hosts, agents cascade) and its hosts' series. */
  async close(): Promise<void> {
    for (const id of this.clients) await this.sys.sql('DELETE FROM clients WHERE id = ?', [id]).catch(() => undefined);
    if (this.hosts.length > 0) {
      await this.tsdb.flush().catch(() => undefined);
      for (let i = 0; i < this.hosts.length; i += 50)
        await this.tsdb.deleteSeries([`{host_id=~"${this.hosts.slice(i, i + 50).join('|')}"}`]).catch(() => undefined);
    }
    await this.nc?.drain();
  }
}

/** Samples of one series: `values[i]` at `t0 + i * stepMs`. */
export function series(
  name: string,
  labels: Record<string, string>,
  t0: number,
  stepMs: number,
  values: number[],
): MetricSample[] {
  return values.map((value, i) => ({ name, value, time_ms: t0 + i * stepMs, labels }));
}

/** A VictoriaMetrics of the test's own (other flags than the shared one), on a free port with a temporary data directory. */
export async function startPrivateTsdb(flags: string[]): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-vm-'));
  const child: ChildProcess = spawn(
    '/usr/bin/victoria-metrics',
    [`-httpListenAddr=127.0.0.1:${port}`, `-storageDataPath=${dir}`, '-dedup.minScrapeInterval=1ms', ...flags],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => (await fetch(`${url}/health`).catch(() => undefined))?.ok === true,
    15_000,
    'private VictoriaMetrics up',
    50,
  );
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type ProxyMode =
  | { kind: 'forward' }
  | { kind: 'refuse' }
  | { kind: 'hang' }
  | { kind: 'status'; status: number; body: string }
  | { kind: 'delay'; ms: number };

/** An upstream request the proxy saw: path and form fields (repeated fields in order). */
export interface SeenRequest {
  path: string;
  form: [string, string][];
}

/**
 * A store in front of the store: forwards to `target` (recording query requests) or fails on demand — refuses
 * connections, never answers, answers a status, or answers late.
 */
export async function startTsdbProxy(
  target: string,
): Promise<{ url: string; mode: ProxyMode; seen: SeenRequest[]; stop: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const state = { mode: { kind: 'forward' } as ProxyMode, seen: [] as SeenRequest[] };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const path = (req.url ?? '/').split('?')[0]!;
    if (path.includes('/query'))
      state.seen.push({ path, form: [...new URLSearchParams(body.toString('utf8')).entries()] });
    const mode = state.mode;
    if (mode.kind === 'refuse') return void req.socket.destroy();
    if (mode.kind === 'hang') return;
    if (mode.kind === 'status') {
      res.writeHead(mode.status, { 'content-type': 'application/json' }).end(mode.body);
      return;
    }
    if (mode.kind === 'delay') await new Promise((r) => setTimeout(r, mode.ms));
    const up = await fetch(target + req.url, {
      method: req.method,
      headers: { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' },
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }),
    }).catch(() => undefined);
    if (!up) return void req.socket.destroy();
    res
      .writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' })
      .end(Buffer.from(await up.arrayBuffer()));
  };
  const server: Server = createServer((req, res) => void handle(req, res).catch(() => req.socket.destroy()));
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  });
}
