import type {
  InventorySnapshotIn,
  MetricBatchIn,
  MetricSample,
  WatchFilesConfig,
} from '../../contracts/domains/agent-telemetry.ts';
import type { Collector, FileWatcher, OnFileChanges } from '../collect/types.ts';
import { seededRandom } from '../../platform/seeded-random.ts';
import { buildHost, round2, type In } from './synthetic-host.ts';

/**
 * A made-up host for the simulator and tests: realistic payload sizes (~300 processes, ~1,500 packages, ~50 metric
 * samples per batch), deterministic per agent index, and cheap. Everything is built once per agent (the package list
 * once per process, shared by all agents); each call only copies the few records whose values move.
 */

export interface SyntheticCollector extends Collector {
  readonly index: number;
}

/** A collector for simulated host `index` (`sim-<index>`). */
export function createSyntheticCollector(index: number): SyntheticCollector {
  const host = buildHost(index);
  const rnd = seededRandom(index ^ 0x9e3779b9);
  const totals = host.series.map((s) => s.base);

  return {
    index,
    facts: async () => host.facts,
    async inventory(labels): Promise<InventorySnapshotIn> {
      // A few busy processes move; the other records are the same objects as last time.
      const processes = host.processes.slice();
      for (let i = 0; i < 10; i++) {
        const at = Math.floor(rnd() * processes.length);
        processes[at] = { ...processes[at]!, cpu_percent: round2(rnd() * 25) };
      }
      return {
        collected_at: new Date().toISOString(),
        agent_version: '',
        facts: host.facts,
        labels,
        processes,
        services: host.services,
        packages: host.packages,
        ports: host.ports,
        interfaces: host.interfaces,
        users: host.users,
        cron_jobs: host.cron,
        firewall_rules: host.firewall,
        certificates: host.certificates,
        kernel_modules: host.modules,
        security_items: host.security,
        containers: host.containers,
      };
    },
    async metrics(): Promise<MetricBatchIn> {
      const samples: In<typeof MetricSample>[] = new Array(host.series.length);
      for (let i = 0; i < host.series.length; i++) {
        const s = host.series[i]!;
        let value: number;
        if (s.counter) value = totals[i] = totals[i]! + s.spread * rnd() * 10;
        else value = Math.max(0, s.base + (rnd() - 0.5) * 2 * s.spread);
        samples[i] = { name: s.name, value: round2(value), labels: s.labels };
      }
      return { collected_at: new Date().toISOString(), samples };
    },
    async integrations(withConfig) {
      if (!withConfig) return host.integrations;
      return host.integrations.map((i) => ({ ...i, config: host.integrationConfig[i.integration_id] }));
    },
  };
}

/** A watcher that takes configs and watches nothing (simulated hosts have no files); it remembers what it got. */
export interface SyntheticWatcher extends FileWatcher {
  readonly applied: WatchFilesConfig[];
}

export function createSyntheticWatcher(_onChanges?: OnFileChanges): SyntheticWatcher {
  const applied: WatchFilesConfig[] = [];
  return {
    applied,
    apply: async (config) => {
      applied.push(config);
    },
    stop: async () => undefined,
  };
}
