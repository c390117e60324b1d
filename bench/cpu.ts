// CPU time per request, by process, read from /proc while a load runs: says where a path's cost lands (the system's
// process, nats-server, PostgreSQL, Valkey, the load generator) instead of guessing it from throughput alone.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { cpuTicks, pidsByComm, threadTicks, TICKS_PER_SECOND } from './proc.ts';

/** A named group of processes: fixed pids, or every process whose command name matches. */
export interface ProcessGroup {
  name: string;
  pids?: () => number[];
  comm?: RegExp;
}

const groupTicks = (g: ProcessGroup): Map<number, number> =>
  new Map((g.pids?.() ?? pidsByComm(g.comm!)).map((pid) => [pid, cpuTicks(pid) ?? 0]));

/** Starts counting; the returned function gives each group's CPU milliseconds since then. */
export function cpuMeter(groups: ProcessGroup[]): () => Record<string, number> {
  const before = groups.map(groupTicks);
  return () =>
    Object.fromEntries(
      groups.map((g, i) => {
        let ticks = 0;
        for (const [pid, t] of groupTicks(g)) ticks += t - (before[i]!.get(pid) ?? 0);
        return [g.name, (ticks * 1000) / TICKS_PER_SECOND];
      }),
    );
}

/**
 * Starts counting the CPU of one process's threads by kind (proc.ts threadTicks); the returned function gives each
 * kind's milliseconds since then. A thread that ended meanwhile is missed: its time is in neither reading.
 */
export function threadMeter(pid: () => number): () => Record<string, number> {
  const before = threadTicks(pid());
  return () => {
    const out: Record<string, number> = {};
    for (const [name, t] of threadTicks(pid())) {
      const ms = ((t - (before.get(name) ?? 0)) * 1000) / TICKS_PER_SECOND;
      if (ms > 0) out[name] = ms;
    }
    return out;
  };
}

/**
 * The machine's CPU time so far, from /proc/stat's first line: all of it, what the hypervisor gave to others, and
 * what was idle (iowait included: a CPU waiting on a disk could have run something).
 */
function machineTicks(): { total: number; steal: number; idle: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already counted in user).
    return {
      total: fields.slice(0, 8).reduce((a, b) => a + b, 0),
      steal: fields[7] ?? 0,
      idle: (fields[3] ?? 0) + (fields[4] ?? 0),
    };
  } catch {
    return { total: 0, steal: 0, idle: 0 };
  }
}

/**
 * Starts counting the machine's busy time; the returned function gives the CPUs kept busy since then, in cores
 * (0 to the machine's count; steal counts as busy: those CPUs were not this machine's to use). Near the core count,
 * the machine itself is the floor of whatever was measured beside it.
 */
export function busyMeter(): () => { busyCores: number; cores: number } {
  const cores = availableParallelism();
  const before = machineTicks();
  return () => {
    const now = machineTicks();
    const total = now.total - before.total;
    return { busyCores: total > 0 ? (cores * (total - (now.idle - before.idle))) / total : 0, cores };
  };
}

/**
 * Starts counting the machine's steal time (a virtual machine's CPUs taken by other tenants); the returned function
 * gives its share of all the machine's CPU time since then, idle included (0 when /proc/stat is unreadable): a
 * measure of the machine during the round, not of the path (a busier path has more time to lose). A round with a
 * large share ran on a slower machine than the one beside it, which says how far to trust its ratio.
 */
export function stealMeter(): () => number {
  const before = machineTicks();
  return () => {
    const now = machineTicks();
    const total = now.total - before.total;
    return total > 0 ? (now.steal - before.steal) / total : 0;
  };
}

/** CPU ms per request of `groups` between `meter`'s start and now, for `requests` requests. */
export function perRequest(meter: () => Record<string, number>, requests: number): Record<string, number> {
  return Object.fromEntries(Object.entries(meter()).map(([k, ms]) => [k, ms / Math.max(1, requests)]));
}
