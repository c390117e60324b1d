import type { z } from 'zod';
import type {
  FileChangeEvent,
  HostFacts,
  IntegrationReport,
  InventorySnapshotIn,
  MetricBatchIn,
  WatchFilesConfig,
} from '../../contracts/domains/agent-telemetry.ts';

/**
 * What the reference agent reads from the machine it runs on. Every method reads the real machine (/proc, /sys, /etc,
 * dpkg, crontabs, systemd, running services); a source that is absent or unreadable yields an empty part, never a
 * failure of the whole collection.
 */
export interface Collector {
  /** Hostname, primary IP, OS, kernel, arch, CPU cores, memory. */
  facts(): Promise<z.input<typeof HostFacts>>;
  /** A full inventory snapshot (facts, labels, processes, services, packages, ...), validated by InventorySnapshot. */
  inventory(labels: Record<string, string>): Promise<InventorySnapshotIn>;
  /** One batch of host, per-process (top 20 by CPU) and container samples; rates need two calls (the first primes). */
  metrics(): Promise<MetricBatchIn>;
  /** Integrations detected on the machine (PostgreSQL, Redis, NATS, ...); config values only when `withConfig`. */
  integrations(withConfig: boolean): Promise<z.input<typeof IntegrationReport>[]>;
}

/** Watches the configured paths and reports changes (docs/api/fleet.md#config-fetch-watch-config-and-commands). */
export interface FileWatcher {
  /** Replaces the watched set (a `config_update` for `watch_files`); resolves once the new set is armed. */
  apply(config: WatchFilesConfig): Promise<void>;
  stop(): Promise<void>;
}

export type FileChangeIn = z.input<typeof FileChangeEvent>;
export type OnFileChanges = (events: FileChangeIn[]) => void;
