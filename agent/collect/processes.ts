import { basename, join } from 'node:path';
import type { ProcessIn } from './contract-inputs.ts';
import { CLK_TCK, listPids, memTotalBytes, procPath, readText, run, sleep, type Roots } from './read.ts';

/** The fields of /proc/[pid]/stat the collectors use (proc(5)); times in clock ticks, vsize in bytes, rss in pages. */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  utime: number;
  stime: number;
  threads: number;
  starttime: number;
  vsize: number;
  rssPages: number;
}

/** Parses /proc/[pid]/stat; the command name is in parentheses and may itself hold spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // f[0] is field 3 (state): field n is f[n - 3].
  const n = (field: number) => Number(f[field - 3] ?? 0);
  if (f.length < 22) return null;
  return {
    pid: Number(text.slice(0, open).trim()),
    comm: text.slice(open + 1, close),
    state: f[0]!,
    ppid: n(4),
    utime: n(14),
    stime: n(15),
    threads: n(20),
    starttime: n(22),
    vsize: n(23),
    rssPages: n(24),
  };
}

const STATES: Record<string, string> = {
  R: 'running',
  S: 'sleeping',
  D: 'disk-sleep',
  Z: 'zombie',
  T: 'stopped',
  t: 'tracing-stop',
  X: 'dead',
  x: 'dead',
  I: 'idle',
  K: 'wake-kill',
  W: 'waking',
  P: 'parked',
};
export const stateName = (letter: string): string => STATES[letter] ?? letter;

/** The effective uid from /proc/[pid]/status (`Uid: real effective saved fs`), as `ps` shows the user. */
export function parseStatusUid(text: string): number | null {
  const m = /^Uid:\s+\d+\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** /proc/stat: aggregate and per-CPU jiffies (busy and total), and the boot time. */
export interface CpuTimes {
  total: { busy: number; total: number; iowait: number };
  perCpu: Map<string, { busy: number; total: number; iowait: number }>;
  btime: number;
}

export function parseProcStatFile(text: string): CpuTimes {
  const perCpu = new Map<string, { busy: number; total: number; iowait: number }>();
  let total = { busy: 0, total: 0, iowait: 0 };
  let btime = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('cpu')) {
      const [name, ...rest] = line.trim().split(/\s+/);
      // user nice system idle iowait irq softirq steal (guest and guest_nice are already inside user and nice).
      const v = rest.slice(0, 8).map(Number);
      const sum = v.reduce((a, b) => a + b, 0);
      const idle = (v[3] ?? 0) + (v[4] ?? 0);
      const t = { busy: sum - idle, total: sum, iowait: v[4] ?? 0 };
      if (name === 'cpu') total = t;
      else perCpu.set(name!, t);
    } else if (line.startsWith('btime ')) btime = Number(line.slice(6));
  }
  return { total, perCpu, btime };
}

export async function readCpuTimes(proc: string): Promise<CpuTimes | null> {
  const text = await readText(join(proc, 'stat'));
  return text === null ? null : parseProcStatFile(text);
}

/** /proc/[pid]/stat of every live process (a process that exits mid-scan is simply absent). */
export async function readAllStats(proc: string): Promise<Map<number, ProcStat>> {
  const pids = await listPids(proc);
  const stats = await Promise.all(
    pids.map(async (pid) => {
      const text = await readText(procPath(proc, pid, 'stat'));
      return text === null ? null : parseProcStat(text);
    }),
  );
  const out = new Map<number, ProcStat>();
  for (const s of stats) if (s) out.set(s.pid, s);
  return out;
}

/**
 * CPU share of each process between two samples, as `top` shows it: 100 = one core fully busy. The previous sample is
 * keyed by pid and start time so a recycled pid never inherits another process's ticks.
 */
export class ProcessCpuTracker {
  private prev = new Map<string, number>();
  private prevTotal: number | null = null;

  get primed(): boolean {
    return this.prevTotal !== null;
  }

  /** Records this sample and returns each process's percentage since the previous one (0 for processes new since). */
  update(stats: Map<number, ProcStat>, times: CpuTimes): Map<number, number> {
    const cores = Math.max(1, times.perCpu.size);
    const elapsed = this.prevTotal === null ? 0 : (times.total.total - this.prevTotal) / cores;
    const next = new Map<string, number>();
    const out = new Map<number, number>();
    for (const s of stats.values()) {
      const key = `${s.pid}:${s.starttime}`;
      const ticks = s.utime + s.stime;
      next.set(key, ticks);
      const before = this.prev.get(key);
      out.set(s.pid, elapsed > 0 && before !== undefined ? round2(Math.max(0, ((ticks - before) / elapsed) * 100)) : 0);
    }
    this.prev = next;
    this.prevTotal = times.total.total;
    return out;
  }
}

export const round2 = (n: number): number => Math.round(n * 100) / 100;

let pageSizeCache: Promise<number> | null = null;
/** The kernel page size (rss in /proc/[pid]/stat is in pages): 4 KiB on x86_64, 4/16/64 KiB on arm64. */
export function pageSize(): Promise<number> {
  pageSizeCache ??= run('getconf', ['PAGESIZE'], 1_000).then((r) => {
    const n = Number(r?.stdout.trim());
    return Number.isInteger(n) && n > 0 ? n : 4096;
  });
  return pageSizeCache;
}

/** Process name: the kernel's comm is cut at 15 characters; the executable's basename when it extends it. */
export function processName(comm: string, argv: string[]): string {
  if (comm.length >= 15 && argv[0]) {
    const exe = basename(argv[0].split(' ')[0]!);
    if (exe.startsWith(comm)) return exe;
  }
  return comm;
}

export const MAX_COMMAND = 4096;

/**
 * Every process with its command line, user, state, CPU since the tracker's previous sample (the first call samples
 * twice 250 ms apart), memory share of MemTotal, and start time (boot time + starttime / CLK_TCK).
 */
export async function collectProcesses(
  roots: Roots,
  tracker: ProcessCpuTracker,
  userNames: Map<number, string>,
): Promise<ProcessIn[]> {
  if (!tracker.primed) {
    const [stats, times] = await Promise.all([readAllStats(roots.proc), readCpuTimes(roots.proc)]);
    if (times) tracker.update(stats, times);
    await sleep(250);
  }
  const [stats, times, memTotal, page] = await Promise.all([
    readAllStats(roots.proc),
    readCpuTimes(roots.proc),
    memTotalBytes(roots.proc),
    pageSize(),
  ]);
  const cpu = times ? tracker.update(stats, times) : new Map<number, number>();
  const btime = times?.btime ?? 0;
  const rows = await Promise.all(
    [...stats.values()].map(async (s): Promise<ProcessIn> => {
      const [status, cmdline] = await Promise.all([
        readText(procPath(roots.proc, s.pid, 'status')),
        readText(procPath(roots.proc, s.pid, 'cmdline')),
      ]);
      const argv = (cmdline ?? '').split('\0').filter((a) => a !== '');
      const uid = status === null ? null : parseStatusUid(status);
      const rss = s.rssPages * page;
      return {
        pid: s.pid,
        name: processName(s.comm, argv).slice(0, 255),
        command: (argv.length > 0 ? argv.join(' ') : `[${s.comm}]`).slice(0, MAX_COMMAND),
        username: (uid === null ? '' : (userNames.get(uid) ?? String(uid))).slice(0, 255),
        state: stateName(s.state),
        ppid: s.ppid,
        threads: s.threads,
        cpu_percent: cpu.get(s.pid) ?? 0,
        memory_percent: memTotal > 0 ? round2((rss / memTotal) * 100) : 0,
        memory_rss_bytes: rss,
        memory_vms_bytes: s.vsize,
        started_at: btime > 0 ? new Date((btime + s.starttime / CLK_TCK) * 1000).toISOString() : null,
      };
    }),
  );
  return rows.sort((a, b) => a.pid - b.pid);
}
