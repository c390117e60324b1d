// The notifications part of `npm run bench` (`npm run bench -- notifications`): a rack of 1,000 hosts going offline at
// once (the notifications grouped: how many reach each channel, how soon the first arrives after the rule's
// threshold, the event loop lag of the process that ingests and sends), and delivery throughput to a local receiver
// (signed webhooks a second from one process), against a floor: the same signed POSTs from a bare loop.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from '@nats-io/transport-node';
import { signWebhook } from '../actors/events/notifications/webhook-signing.ts';
import type { Config } from '../platform/config.ts';
import { publishDurable } from '../platform/jetstream.ts';
import type { Stores } from '../platform/stores/index.ts';
import { freshBenchClient } from './fixtures.ts';
import { spread, type Spread } from './stats.ts';

export const NOTIFY_PORT = 18089;
const HOSTS = Math.max(10, Number(process.env.BENCH_NOTIFY_HOSTS ?? 1_000));
const DELIVERIES = Math.max(100, Number(process.env.BENCH_NOTIFY_DELIVERIES ?? 3_000));
/** The rule's threshold: 3 s offline. */
const OFFLINE_MINUTES = 0.05;
const TARGET = { firstAfterThresholdMs: 5_000, lagP99Ms: 100, webhooksPerSecond: 500 };

export interface NotificationsBenchDeps {
  config: Config;
  stores: Stores;
  nc: NatsConnection;
  token: string;
  rounds: number;
  start: (args: string[], env: Record<string, string>, readyUrl: string) => Promise<ChildProcess>;
  env: Record<string, string>;
}

export interface NotificationFigures {
  rack: {
    hosts: number;
    /** Messages each channel received for the rack (the target: one per rule and channel per grouping window). */
    perChannel: Record<string, number>;
    /** How many offline hosts the one notification counted. */
    counted: number;
    firstAfterThresholdMs: number;
    /** Until the notification had counted every host. */
    allCountedMs: number;
    lagP99Ms: number;
    lagMaxMs: number;
  };
  throughput: { deliveries: number; perSecond: Spread; floorPerSecond: Spread; ratio: Spread };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A receiver that answers 200 at once and notes when each message came, per path. */
function receiver(): Promise<{ server: Server; url: string; seen: Map<string, number[]> }> {
  const seen = new Map<string, number[]>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const at = performance.now();
      const path = req.url ?? '/';
      const list = seen.get(path) ?? [];
      list.push(at);
      seen.set(path, list);
      res.writeHead(200).end('ok');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }),
    ),
  );
}

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** prom-client's event loop figures of a process (its histogram restarts at each scrape). */
async function loopLag(base: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

/** The floor: the same signed POSTs from a bare loop in this process, 32 at a time. */
async function floorRate(url: string, seen: Map<string, number[]>, n: number): Promise<number> {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = JSON.stringify({ type: 'notification.test', timestamp: new Date().toISOString(), data: { n } });
  const agent = new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 32 });
  const started = performance.now();
  await pool(
    Array.from({ length: n }, (_, i) => i),
    32,
    () =>
      new Promise<void>((resolve, reject) => {
        const headers = signWebhook({ id: randomUUID(), timestamp: new Date(), body, secrets: [secret] });
        const req = request(
          `${url}/floor`,
          { method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve());
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
  );
  agent.destroy();
  seen.delete('/floor');
  return n / ((performance.now() - started) / 1000);
}

export async function notificationsBench(deps: NotificationsBenchDeps): Promise<NotificationFigures> {
  const base = `http://127.0.0.1:${NOTIFY_PORT}`;
  // Identity (token checks) and events on one event loop, the console gateway in front: the process that ingests the
  // fleet's events and sends, as `npm start` runs it but without the fleet's telemetry consumers.
  await deps.start(
    ['main.ts'],
    {
      ...deps.env,
      SVC_SERVER_PORT: String(NOTIFY_PORT),
      SVC_GATEWAYS: 'console',
      SVC_ACTORS: 'identity,events',
      SVC_ENABLE_DEBUG_ENDPOINTS: 'true',
      SVC_NOTIFY_ALLOW_HTTP: 'true',
      SVC_NOTIFY_ALLOW_PRIVATE: 'true',
    },
    `${base}/readyz`,
  );
  const conn = (await deps.stores.orm()).em.fork().getConnection();
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${deps.token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { data: T }).data;
  };
  const { clientId, envId } = await freshBenchClient(conn, 'bench-notify', 'Bench notifications');
  const peer = await receiver();
  try {
    // A rack: 1,000 hosts of one environment, all offline at the same instant.
    const hosts = (
      await conn.execute<{ id: string; hostname: string }[]>(
        `INSERT INTO hosts (id, environment_id, client_id, hostname, agent_status, last_seen_at)
         SELECT gen_random_uuid(), ?, ?, 'rack-' || lpad(g::text, 4, '0'), 'online', now() FROM generate_series(1, ?) g
         RETURNING id, hostname`,
        [envId, clientId, HOSTS],
      )
    ).map((h) => h);
    const hook = await api<{ id: string }>('POST', '/api/v1/notification-channels', {
      client_id: clientId,
      kind: 'webhook',
      name: 'rack hook',
      url: `${peer.url}/rack-hook`,
    });
    const chat = await api<{ id: string }>('POST', '/api/v1/notification-channels', {
      client_id: clientId,
      kind: 'chat',
      name: 'rack chat',
      url: `${peer.url}/rack-chat`,
    });
    const rule = await api<{ id: string }>('POST', '/api/v1/notification-rules', {
      client_id: clientId,
      name: 'rack down',
      event: 'agent_offline',
      offline_minutes: OFFLINE_MINUTES,
      group_window_minutes: 60,
      steps: [{ after_minutes: 0, channel_ids: [hook.id, chat.id] }],
    });
    await loopLag(base);
    const at = new Date();
    const t0 = performance.now();
    await pool(hosts, 64, (h) =>
      publishDurable(
        deps.nc,
        'svc.evt.fleet.agent_status',
        {
          host_id: h.id,
          agent_id: randomUUID(),
          environment_id: envId,
          client_id: clientId,
          hostname: h.hostname,
          status: 'offline',
          previous: 'online',
          at: at.toISOString(),
        },
        { msgId: `bench-rack:${h.id}:${at.getTime()}` },
      ),
    );
    const threshold = t0 + OFFLINE_MINUTES * 60_000;
    let counted = 0;
    let allCountedAt = NaN;
    for (let i = 0; i < 600 && counted < HOSTS; i++) {
      await sleep(100);
      const [row] = await conn.execute<{ count: number }[]>(
        `SELECT count FROM notifications WHERE rule_id = ? ORDER BY first_at LIMIT 1`,
        [rule.id],
      );
      counted = row?.count ?? 0;
      if (counted >= HOSTS) allCountedAt = performance.now();
    }
    // Later messages would show up within a few seconds of the last count.
    await sleep(3_000);
    const lag = await loopLag(base);
    const first = Math.min(...['/rack-hook', '/rack-chat'].map((p) => peer.seen.get(p)?.[0] ?? Infinity));
    const rack = {
      hosts: HOSTS,
      perChannel: {
        webhook: peer.seen.get('/rack-hook')?.length ?? 0,
        chat: peer.seen.get('/rack-chat')?.length ?? 0,
      },
      counted,
      firstAfterThresholdMs: first - threshold,
      allCountedMs: allCountedAt - t0,
      lagP99Ms: lag.p99,
      lagMaxMs: lag.max,
    };

    // Throughput: deliveries made ahead (rows as the API makes them), then their jobs; measured at the receiver from
    // the first to the last arrival.
    const channel = await api<{ id: string }>('POST', '/api/v1/notification-channels', {
      client_id: clientId,
      kind: 'webhook',
      name: 'throughput',
      url: `${peer.url}/throughput`,
    });
    const rates: number[] = [];
    const floors: number[] = [];
    for (let round = 0; round < deps.rounds; round++) {
      peer.seen.delete('/throughput');
      const ids = (
        await conn.execute<{ id: string }[]>(
          `INSERT INTO notification_deliveries (id, client_id, channel_id, notification_id, kind, step, dedupe_key, status, payload)
           SELECT gen_random_uuid(), ?, ?, NULL, 'test', 0, 'bench:' || gen_random_uuid(), 'pending',
                  jsonb_build_object('type', 'notification.test', 'title', 'bench', 'text', 'bench', 'severity', 'info',
                    'status', 'test', 'client_id', ?::text, 'environment_id', NULL, 'host_id', NULL, 'notification_id', NULL,
                    'rule_id', NULL, 'count', 1, 'step', 0, 'at', now(), 'acknowledge_url', NULL)
             FROM generate_series(1, ?) RETURNING id`,
          [clientId, channel.id, clientId, DELIVERIES],
        )
      ).map((r) => r.id);
      await pool(ids, 128, (id) =>
        publishDurable(deps.nc, 'svc.work.events.notify', { delivery_id: id }, { msgId: `notify:${id}` }),
      );
      for (let i = 0; i < 1_200 && (peer.seen.get('/throughput')?.length ?? 0) < DELIVERIES; i++) await sleep(100);
      const times = peer.seen.get('/throughput') ?? [];
      rates.push(times.length / ((times[times.length - 1]! - times[0]!) / 1000));
      floors.push(await floorRate(peer.url, peer.seen, DELIVERIES));
    }
    const figures: NotificationFigures = {
      rack,
      throughput: {
        deliveries: DELIVERIES,
        perSecond: spread(rates),
        floorPerSecond: spread(floors),
        ratio: spread(rates.map((r, i) => r / floors[i]!)),
      },
    };
    report(figures);
    return figures;
  } finally {
    peer.server.close();
    await conn.execute(`DELETE FROM clients WHERE id = ?`, [clientId]);
  }
}

function report(f: NotificationFigures): void {
  const s = (x: Spread, d = 0): string => `${x.mean.toFixed(d)} (${x.min.toFixed(d)}–${x.max.toFixed(d)})`;
  const r = f.rack;
  console.log(
    [
      `\n## notifications`,
      `a rack of ${r.hosts} hosts offline at once: ${r.perChannel.webhook} webhook and ${r.perChannel.chat} chat message(s) (target: 1 per rule and channel per grouping window); one notification counting ${r.counted} hosts, all counted ${(r.allCountedMs / 1000).toFixed(1)} s after the events`,
      `the first message ${(r.firstAfterThresholdMs / 1000).toFixed(2)} s after the rule's threshold (target ≤ ${TARGET.firstAfterThresholdMs / 1000} s)`,
      `event loop lag of the ingesting process meanwhile: p99 ${r.lagP99Ms.toFixed(1)} ms, max ${r.lagMaxMs.toFixed(1)} ms (target p99 < ${TARGET.lagP99Ms})`,
      `signed webhooks to a local receiver from one process: ${s(f.throughput.perSecond)}/s over ${f.throughput.deliveries} deliveries (target ≥ ${TARGET.webhooksPerSecond}); a bare signing loop ${s(f.throughput.floorPerSecond)}/s; ratio ${s(f.throughput.ratio, 2)}`,
    ].join('\n'),
  );
}
