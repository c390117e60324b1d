import { existsSync } from 'node:fs';
import { request } from 'node:http';
import type { ContainerIn, SampleIn } from './contract-inputs.ts';
import { round2 } from './processes.ts';

/** A container engine speaking the Docker Engine API on a Unix socket (Docker; Podman's compatible service). */
export interface Engine {
  socketPath: string;
  runtime: 'docker' | 'podman';
}

export const DEFAULT_ENGINES: Engine[] = [
  { socketPath: '/var/run/docker.sock', runtime: 'docker' },
  { socketPath: '/run/podman/podman.sock', runtime: 'podman' },
];

/** The first engine whose socket exists. */
export function findEngine(candidates: Engine[] = DEFAULT_ENGINES): Engine | null {
  return candidates.find((e) => existsSync(e.socketPath)) ?? null;
}

/** GET on the engine API; rejects on a non-2xx status, a socket error or after `timeoutMs`. */
export function engineGet(socketPath: string, path: string, timeoutMs = 1_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path, method: 'GET', headers: { host: 'docker', accept: 'application/json' }, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 500) >= 300)
            return reject(new Error(`${path}: HTTP ${res.statusCode} ${body.slice(0, 200)}`));
          try {
            resolve(JSON.parse(body));
          } catch (e) {
            reject(e as Error);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${path}: timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

interface ListedContainer {
  Id?: string;
  Names?: string[];
  Image?: string;
  State?: string;
  Status?: string;
  Created?: number;
  Labels?: Record<string, string> | null;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** `GET /containers/json?all=1` rows → container records (labels capped to the contract's 200 keys). */
export function containerRecords(list: unknown, runtime: string): ContainerIn[] {
  if (!Array.isArray(list)) return [];
  return (list as ListedContainer[])
    .filter((c) => typeof c.Id === 'string')
    .map((c) => {
      const labels: Record<string, string> = {};
      for (const [k, v] of Object.entries(c.Labels ?? {}).slice(0, 200))
        if (k !== '' && k.length <= 128) labels[k] = str(v).slice(0, 1024);
      return {
        container_id: c.Id!.slice(0, 128),
        name: (c.Names?.[0] ?? c.Id!.slice(0, 12)).replace(/^\//, '').slice(0, 255),
        image: str(c.Image).slice(0, 1024),
        state: (str(c.State) || 'unknown').slice(0, 32),
        status: str(c.Status).slice(0, 255),
        runtime,
        created_at: typeof c.Created === 'number' && c.Created > 0 ? new Date(c.Created * 1000).toISOString() : null,
        labels,
      };
    });
}

/** The part of `GET /containers/{id}/stats` the samples use. */
export interface EngineStats {
  cpu_stats?: {
    cpu_usage?: { total_usage?: number; percpu_usage?: number[] };
    system_cpu_usage?: number;
    online_cpus?: number;
  };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
  blkio_stats?: { io_service_bytes_recursive?: { op?: string; value?: number }[] | null };
}

export interface CpuMark {
  total: number;
  system: number;
}

/**
 * Samples of one container, computed as `docker stats` does: CPU = Δcontainer / Δsystem × online CPUs × 100 (against
 * the engine's precpu, else the previous sample we kept); memory used = usage − inactive file cache; network and
 * block I/O are cumulative counters (the server turns them into rates).
 */
export function containerSamples(
  stats: EngineStats,
  labels: Record<string, string>,
  previous?: CpuMark,
): { samples: SampleIn[]; mark: CpuMark | null } {
  const samples: SampleIn[] = [];
  const add = (name: string, value: number | undefined) => {
    if (value !== undefined && Number.isFinite(value)) samples.push({ name, value, labels });
  };
  const cpu = stats.cpu_stats;
  const total = cpu?.cpu_usage?.total_usage;
  const system = cpu?.system_cpu_usage;
  const mark = total !== undefined && system !== undefined ? { total, system } : null;
  const pre = stats.precpu_stats?.system_cpu_usage
    ? { total: stats.precpu_stats.cpu_usage?.total_usage ?? 0, system: stats.precpu_stats.system_cpu_usage }
    : previous;
  if (mark && pre && mark.system > pre.system) {
    const cpus = cpu?.online_cpus || cpu?.cpu_usage?.percpu_usage?.length || 1;
    add(
      'container_cpu_usage',
      round2(Math.max(0, ((mark.total - pre.total) / (mark.system - pre.system)) * cpus * 100)),
    );
  }
  const mem = stats.memory_stats;
  if (mem?.usage !== undefined) {
    const cache = mem.stats?.total_inactive_file ?? mem.stats?.inactive_file ?? 0;
    const used = Math.max(0, mem.usage - cache);
    add('container_memory_used', used);
    add('container_memory_limit', mem.limit);
    if (mem.limit) add('container_memory_usage', round2((used / mem.limit) * 100));
  }
  if (stats.networks) {
    const nets = Object.values(stats.networks);
    add(
      'container_network_receive',
      nets.reduce((a, n) => a + (n.rx_bytes ?? 0), 0),
    );
    add(
      'container_network_transmit',
      nets.reduce((a, n) => a + (n.tx_bytes ?? 0), 0),
    );
  }
  const io = stats.blkio_stats?.io_service_bytes_recursive;
  if (Array.isArray(io)) {
    const sum = (op: string) => io.filter((e) => e.op?.toLowerCase() === op).reduce((a, e) => a + (e.value ?? 0), 0);
    add('container_block_read', sum('read'));
    add('container_block_write', sum('write'));
  }
  return { samples, mark };
}

export async function collectContainers(engine: Engine | null): Promise<ContainerIn[]> {
  if (!engine) return [];
  return containerRecords(await engineGet(engine.socketPath, '/containers/json?all=1'), engine.runtime).slice(0, 5_000);
}

/** Keeps each running container's previous CPU reading between metric batches (one-shot stats carry no precpu). */
export class ContainerMetrics {
  private marks = new Map<string, CpuMark>();

  async collect(engine: Engine | null): Promise<SampleIn[]> {
    if (!engine) return [];
    const running = containerRecords(await engineGet(engine.socketPath, '/containers/json'), engine.runtime);
    const next = new Map<string, CpuMark>();
    const parts = await Promise.all(
      running.map(async (c) => {
        try {
          // one-shot: the engine answers at once instead of waiting a second for its own second reading.
          const stats = (await engineGet(
            engine.socketPath,
            `/containers/${c.container_id}/stats?stream=false&one-shot=true`,
          )) as EngineStats;
          const { samples, mark } = containerSamples(
            stats,
            { container_id: c.container_id, container_name: c.name },
            this.marks.get(c.container_id),
          );
          if (mark) next.set(c.container_id, mark);
          return samples;
        } catch {
          return [];
        }
      }),
    );
    this.marks = next;
    return parts.flat();
  }
}
