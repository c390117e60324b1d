import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLS_FILES } from '../../platform/broker/certificates.ts';
import { readTrust, serverConfig } from '../../platform/broker/trust.ts';
import { NATS_DIR } from './env.ts';
import { freePort, sleep, waitFor } from './processes.ts';

/**
 * Three real nats-server processes on loopback ports picked at run time: one JetStream cluster with TLS on clients
 * and routes and the project's operator configuration (the same trust chain and certificates as the local broker,
 * so the service credentials and SVC_NATS_CA work), each with its own data under a temporary directory. Only these
 * processes are ever stopped or killed.
 */

interface Node {
  name: string;
  clientPort: number;
  routePort: number;
  monitorPort: number;
  dir: string;
  proc?: ChildProcess;
}

interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

export class NatsCluster {
  readonly nodes: Node[];
  private readonly root: string;
  private constructor(root: string, nodes: Node[]) {
    this.root = root;
    this.nodes = nodes;
  }

  static async start(size = 3): Promise<NatsCluster> {
    const root = mkdtempSync(join(tmpdir(), 'nats-cluster-'));
    const nodes: Node[] = [];
    for (let i = 1; i <= size; i++) {
      const dir = join(root, `n${i}`);
      mkdirSync(dir, { recursive: true });
      nodes.push({
        name: `n${i}`,
        clientPort: await freePort(),
        routePort: await freePort(),
        monitorPort: await freePort(),
        dir,
      });
    }
    const trust = await readTrust(NATS_DIR);
    const tls = {
      cert: join(NATS_DIR, TLS_FILES.cert),
      key: join(NATS_DIR, TLS_FILES.key),
      ca: join(NATS_DIR, TLS_FILES.ca),
    };
    for (const n of nodes) {
      const routes = nodes.filter((o) => o !== n).map((o) => `nats-route://127.0.0.1:${o.routePort}`);
      writeFileSync(
        join(n.dir, 'nats-server.conf'),
        serverConfig({
          ...trust,
          tls,
          cluster: { cluster: 'svc-test', serverName: n.name, listen: `127.0.0.1:${n.routePort}`, routes },
        }),
      );
    }
    const cluster = new NatsCluster(root, nodes);
    for (let i = 0; i < nodes.length; i++) cluster.run(i);
    await cluster.waitHealthy();
    return cluster;
  }

  /** Every client URL, comma-separated (what SVC_NATS_URL and SVC_AGENT_NATS_SERVERS hold). */
  get urls(): string {
    return this.nodes.map((n) => this.url(n)).join(',');
  }

  url(node: Node | number): string {
    const n = typeof node === 'number' ? this.nodes[node]! : node;
    return `nats://127.0.0.1:${n.clientPort}`;
  }

  /** Starts (or restarts, on its data) node `i`. */
  run(i: number): void {
    const n = this.nodes[i]!;
    n.proc = spawn(
      'nats-server',
      [
        '-c',
        'nats-server.conf',
        '-a',
        '127.0.0.1',
        '-p',
        String(n.clientPort),
        '-m',
        String(n.monitorPort),
        '-l',
        'nats-server.log',
      ],
      { cwd: n.dir, stdio: 'ignore' },
    );
  }

  private async monitor<T>(n: Node, path: string): Promise<{ status: number; body: T } | undefined> {
    try {
      const res = await fetch(`http://127.0.0.1:${n.monitorPort}${path}`, { signal: AbortSignal.timeout(2_000) });
      return { status: res.status, body: (await res.json()) as T };
    } catch {
      return undefined;
    }
  }

  private running(n: Node): boolean {
    return n.proc !== undefined && n.proc.exitCode === null && n.proc.signalCode === null;
  }

  /** Every running node answers /healthz with JetStream ready, and they agree on a meta leader. */
  async waitHealthy(timeoutMs = 60_000): Promise<void> {
    await waitFor(
      async () => {
        const live = this.nodes.filter((n) => this.running(n));
        const checks = await Promise.all(
          live.map(async (n) => ({
            health: await this.monitor(n, '/healthz?js-enabled-only=true'),
            jsz: await this.monitor<Jsz>(n, '/jsz'),
          })),
        );
        return checks.every((c) => c.health?.status === 200 && !!c.jsz?.body.meta_cluster?.leader);
      },
      timeoutMs,
      'the cluster to be healthy with a meta leader',
      250,
    );
  }

  /** The server name of the JetStream meta leader, as a running node sees it. */
  async metaLeader(): Promise<string | undefined> {
    for (const n of this.nodes.filter((x) => this.running(x))) {
      const leader = (await this.monitor<Jsz>(n, '/jsz'))?.body.meta_cluster?.leader;
      if (leader) return leader;
    }
    return undefined;
  }

  indexOf(serverName: string): number {
    return this.nodes.findIndex((n) => n.name === serverName);
  }

  /** kill -9: no goodbye to clients or peers, like a lost machine. */
  async kill(i: number): Promise<void> {
    const n = this.nodes[i]!;
    if (!n.proc || !this.running(n)) return;
    const exited = new Promise<void>((r) => n.proc!.once('exit', () => r()));
    n.proc.kill('SIGKILL');
    await exited;
  }

  /** SIGSTOP: the process stays, its sockets stay open, and nothing answers (a stalled disk, a long pause, a half-open network). */
  freeze(i: number): void {
    this.nodes[i]!.proc?.kill('SIGSTOP');
  }

  /** SIGCONT after `freeze`. */
  thaw(i: number): void {
    this.nodes[i]!.proc?.kill('SIGCONT');
  }

  /** The node whose client port `server` (`host:port`, as a client's getServer() says) names. */
  indexOfServer(server: string | undefined): number {
    const port = Number(server?.split(':').pop());
    return this.nodes.findIndex((n) => n.clientPort === port);
  }

  /** A clean stop (SIGTERM: lame-duck off, clients told), as in a rolling restart. */
  async stop(i: number): Promise<void> {
    const n = this.nodes[i]!;
    if (!n.proc || !this.running(n)) return;
    const exited = new Promise<void>((r) => n.proc!.once('exit', () => r()));
    n.proc.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000).then(() => n.proc!.kill('SIGKILL'))]);
    await exited;
  }

  async close(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) await this.kill(i);
    // NATS_CLUSTER_KEEP=1 keeps the nodes' logs and data for a look after a failure.
    if (process.env.NATS_CLUSTER_KEEP === '1') process.stderr.write(`[nats-cluster] kept ${this.root}\n`);
    else rmSync(this.root, { recursive: true, force: true });
  }
}
