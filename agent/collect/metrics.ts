import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { SampleIn } from './contract-inputs.ts';
import { ContainerMetrics, type Engine } from './containers.ts';
import { listDir, parseMeminfo, procPath, readText, sleep, type Roots } from './read.ts';
import {
  pageSize,
  processName,
  ProcessCpuTracker,
  readAllStats,
  readCpuTimes,
  round2,
  type CpuTimes,
} from './processes.ts';

/** /proc/diskstats: bytes read and written per device (sectors there are always 512 bytes). */
export function parseDiskstats(text: string): Map<string, { read: number; written: number }> {
  const out = new Map<string, { read: number; written: number }>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 14) continue;
    out.set(f[2]!, { read: Number(f[5]) * 512, written: Number(f[9]) * 512 });
  }
  return out;
}

/** /proc/net/dev: received and transmitted bytes per interface. */
export function parseNetDev(text: string): Map<string, { rx: number; tx: number }> {
  const out = new Map<string, { rx: number; tx: number }>();
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const f = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/);
    out.set(line.slice(0, colon).trim(), { rx: Number(f[0]), tx: Number(f[8]) });
  }
  return out;
}

export interface Mount {
  device: string;
  mountpoint: string;
  fstype: string;
}

const VIRTUAL_FS = new Set(['squashfs', 'iso9660', 'udf', 'nsfs', 'autofs']);
const unescapeMount = (s: string): string =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/**
 * /proc/mounts reduced to real filesystems: block devices (and ZFS datasets), a container's overlay root; read-only
 * images (squashfs snaps, ISO) left out; each device once, at its first mount point (bind mounts repeat it).
 */
export function realFilesystems(mountsText: string): Mount[] {
  const seen = new Set<string>();
  const out: Mount[] = [];
  for (const line of mountsText.split('\n')) {
    const [device, mp, fstype] = line.split(' ');
    if (!device || !mp || !fstype) continue;
    const mountpoint = unescapeMount(mp);
    const real =
      (device.startsWith('/dev/') && !VIRTUAL_FS.has(fstype)) ||
      fstype === 'zfs' ||
      (fstype === 'overlay' && mountpoint === '/');
    if (!real || seen.has(device)) continue;
    seen.add(device);
    out.push({ device, mountpoint, fstype });
  }
  return out;
}

const TOP_PROCESSES = 20;

/**
 * Host metric batches. CPU (host and per process) are rates between two calls: the first call samples twice 250 ms
 * apart, later calls compare with the previous call. Disk, network and container I/O are cumulative counters.
 */
export class MetricsCollector {
  private cpuPrev: CpuTimes | null = null;
  private readonly processes = new ProcessCpuTracker();
  private readonly containers = new ContainerMetrics();

  private readonly roots: Roots;
  private readonly engine: () => Engine | null;
  constructor(roots: Roots, engine: () => Engine | null) {
    this.roots = roots;
    this.engine = engine;
  }

  async collect(): Promise<SampleIn[]> {
    const proc = this.roots.proc;
    if (!this.cpuPrev) {
      const [times, stats] = await Promise.all([readCpuTimes(proc), readAllStats(proc)]);
      this.cpuPrev = times;
      if (times) this.processes.update(stats, times);
      await sleep(250);
    }
    const [times, stats, meminfo, loadavg, uptime, diskstats, netdev, mounts, page, containers] = await Promise.all([
      readCpuTimes(proc),
      readAllStats(proc),
      readText(join(proc, 'meminfo')),
      readText(join(proc, 'loadavg')),
      readText(join(proc, 'uptime')),
      readText(join(proc, 'diskstats')),
      readText(join(proc, 'net', 'dev')),
      readText(join(proc, 'mounts')),
      pageSize(),
      this.containers.collect(this.engine()).catch(() => [] as SampleIn[]),
    ]);
    const samples: SampleIn[] = [];
    const add = (name: string, value: number, labels?: Record<string, string>) => {
      if (Number.isFinite(value)) samples.push(labels ? { name, value, labels } : { name, value });
    };

    if (times && this.cpuPrev) {
      const pct = (now: { busy: number; total: number }, before?: { busy: number; total: number }) =>
        before && now.total > before.total
          ? round2(((now.busy - before.busy) / (now.total - before.total)) * 100)
          : null;
      const total = pct(times.total, this.cpuPrev.total);
      if (total !== null) add('cpu_usage_percent', total);
      const dt = times.total.total - this.cpuPrev.total.total;
      if (dt > 0) add('cpu_iowait_percent', round2(((times.total.iowait - this.cpuPrev.total.iowait) / dt) * 100));
      for (const [cpu, now] of times.perCpu) {
        const p = pct(now, this.cpuPrev.perCpu.get(cpu));
        if (p !== null) add('cpu_usage_percent', p, { cpu });
      }
    }
    if (times) this.cpuPrev = times;

    if (loadavg) {
      const [l1, l5, l15] = loadavg.trim().split(/\s+/).map(Number);
      add('load_1', l1!);
      add('load_5', l5!);
      add('load_15', l15!);
    }
    if (uptime) add('uptime_seconds', Math.floor(Number(uptime.split(' ')[0])));

    let memTotal = 0;
    if (meminfo) {
      const m = parseMeminfo(meminfo);
      const kb = (k: string) => (m.get(k) ?? 0) * 1024;
      memTotal = kb('MemTotal');
      // MemAvailable exists since Linux 3.14; before, free + buffers + cache approximates it.
      const available = m.has('MemAvailable') ? kb('MemAvailable') : kb('MemFree') + kb('Buffers') + kb('Cached');
      add('memory_total_bytes', memTotal);
      add('memory_available_bytes', available);
      add('memory_used_bytes', memTotal - available);
      if (memTotal > 0) add('memory_usage_percent', round2(((memTotal - available) / memTotal) * 100));
      add('swap_total_bytes', kb('SwapTotal'));
      add('swap_used_bytes', kb('SwapTotal') - kb('SwapFree'));
    }

    if (diskstats) {
      // Whole physical disks: /sys/block entries backed by a device (loop, ram, zram, dm, md have no `device` link).
      const disks = await listDir(join(this.roots.sys, 'block'));
      const physical = (
        await Promise.all(
          disks.map(async (d) => ((await listDir(join(this.roots.sys, 'block', d, 'device'))).length > 0 ? d : null)),
        )
      ).filter((d): d is string => d !== null);
      const io = parseDiskstats(diskstats);
      for (const device of physical) {
        const d = io.get(device);
        if (!d) continue;
        add('disk_read_bytes_total', d.read, { device });
        add('disk_write_bytes_total', d.written, { device });
      }
    }

    if (netdev) {
      for (const [iface, n] of parseNetDev(netdev)) {
        add('network_receive_bytes_total', n.rx, { interface: iface });
        add('network_transmit_bytes_total', n.tx, { interface: iface });
      }
    }

    if (mounts) {
      const fss = await Promise.all(
        realFilesystems(mounts).map(async (m) => ({ m, s: await statfs(m.mountpoint).catch(() => null) })),
      );
      for (const { m, s } of fss) {
        if (!s || s.blocks === 0) continue;
        const size = s.blocks * s.bsize;
        const used = (s.blocks - s.bfree) * s.bsize;
        const avail = s.bavail * s.bsize;
        const labels = { mountpoint: m.mountpoint, fstype: m.fstype };
        add('filesystem_size_bytes', size, labels);
        add('filesystem_used_bytes', used, labels);
        add('filesystem_available_bytes', avail, labels);
        // As df computes Use%: used over what non-root users can reach (used + available).
        if (used + avail > 0) add('filesystem_usage_percent', round2((used / (used + avail)) * 100), labels);
      }
    }

    add('processes_total', stats.size);
    if (times) {
      const cpu = this.processes.update(stats, times);
      const top = [...stats.values()]
        .sort((a, b) => (cpu.get(b.pid) ?? 0) - (cpu.get(a.pid) ?? 0) || b.rssPages - a.rssPages)
        .slice(0, TOP_PROCESSES);
      const cmdlines = await Promise.all(top.map((s) => readText(procPath(proc, s.pid, 'cmdline'))));
      top.forEach((s, i) => {
        const labels = { pid: String(s.pid), process_name: processName(s.comm, (cmdlines[i] ?? '').split('\0')) };
        const rss = s.rssPages * page;
        add('process_cpu_usage', cpu.get(s.pid) ?? 0, labels);
        add('process_memory_usage', memTotal > 0 ? round2((rss / memTotal) * 100) : 0, labels);
        add('process_memory_rss', rss, labels);
        add('process_threads', s.threads, labels);
      });
    }

    samples.push(...containers);
    return samples;
  }
}
