import type { z } from 'zod';
import type { ContainerRecord, ProcessRecord } from '../../contracts/domains/agent-telemetry.ts';

/** One metric series of a simulated host: a fixed name and label object; its value moves per batch. */
export interface Series {
  name: string;
  labels: Record<string, string>;
  base: number;
  spread: number;
  counter: boolean;
}

/** What a host's series are derived from. */
export interface SeriesSource {
  cores: number;
  memory: number;
  bootedAt: number;
  processes: z.input<typeof ProcessRecord>[];
  containers: z.input<typeof ContainerRecord>[];
}

/** The host's ~50 series (host, disks, network, the busiest processes, a container), in a fixed order of draws. */
export function metricSeries(
  rnd: () => number,
  { cores, memory, bootedAt, processes, containers }: SeriesSource,
): Series[] {
  const series: Series[] = [
    { name: 'host_cpu_usage', labels: {}, base: 10 + rnd() * 40, spread: 10, counter: false },
    { name: 'host_load1', labels: {}, base: cores * rnd() * 0.5, spread: 0.5, counter: false },
    { name: 'host_load5', labels: {}, base: cores * rnd() * 0.5, spread: 0.2, counter: false },
    { name: 'host_load15', labels: {}, base: cores * rnd() * 0.5, spread: 0.1, counter: false },
    { name: 'host_memory_total', labels: {}, base: memory, spread: 0, counter: false },
    { name: 'host_memory_used', labels: {}, base: memory * (0.3 + rnd() * 0.4), spread: memory * 0.02, counter: false },
    { name: 'host_memory_usage', labels: {}, base: 30 + rnd() * 40, spread: 2, counter: false },
    { name: 'host_swap_used', labels: {}, base: rnd() * 1e8, spread: 1e6, counter: false },
    { name: 'host_uptime', labels: {}, base: (Date.now() - bootedAt) / 1000, spread: 2, counter: true },
    { name: 'host_processes', labels: {}, base: 300, spread: 5, counter: false },
  ];
  for (const mount of ['/', '/var', '/boot']) {
    series.push({ name: 'host_disk_used', labels: { mount }, base: 5e9 + rnd() * 5e10, spread: 1e7, counter: false });
    series.push({ name: 'host_disk_usage', labels: { mount }, base: 20 + rnd() * 60, spread: 0.1, counter: false });
  }
  for (const device of ['sda', 'sdb']) {
    series.push({ name: 'host_disk_read', labels: { device }, base: rnd() * 1e10, spread: 1e6, counter: true });
    series.push({ name: 'host_disk_write', labels: { device }, base: rnd() * 1e10, spread: 2e6, counter: true });
  }
  series.push({
    name: 'host_network_receive',
    labels: { interface: 'eth0' },
    base: rnd() * 1e11,
    spread: 5e6,
    counter: true,
  });
  series.push({
    name: 'host_network_transmit',
    labels: { interface: 'eth0' },
    base: rnd() * 1e11,
    spread: 3e6,
    counter: true,
  });
  const top = processes.slice(0, 20);
  for (const p of top.slice(0, 10)) {
    const labels = { process_name: p.name, pid: String(p.pid) };
    series.push({ name: 'process_cpu_usage', labels, base: p.cpu_percent, spread: 1, counter: false });
    series.push({ name: 'process_memory_rss', labels, base: p.memory_rss_bytes, spread: 1e5, counter: false });
    series.push({ name: 'process_memory_usage', labels, base: p.memory_percent, spread: 0.1, counter: false });
  }
  for (const c of containers.slice(0, 1)) {
    const labels = { container_id: c.container_id.slice(0, 12), container_name: c.name };
    series.push({ name: 'container_cpu_usage', labels, base: rnd() * 50, spread: 5, counter: false });
    series.push({ name: 'container_memory_used', labels, base: rnd() * 5e8, spread: 1e6, counter: false });
  }
  while (series.length < 50) {
    const p = top[series.length % top.length]!;
    series.push({
      name: 'process_threads',
      labels: { process_name: p.name, pid: String(p.pid), slot: String(series.length) },
      base: p.threads,
      spread: 0,
      counter: false,
    });
  }
  return series;
}
