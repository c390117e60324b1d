// What the bench reads of a process from /proc: its CPU time, its memory, its parent. One reader for every part.
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ on Linux: the unit of /proc/<pid>/stat's CPU times. */
export const TICKS_PER_SECOND = 100;

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined; // the process ended
  }
}

/** CPU time (user + system) a process has used so far, in ticks; undefined once it has ended. */
export function cpuTicks(pid: number): number | undefined {
  const f = statFields(pid);
  // utime and stime are stat's 14th and 15th fields: 11th and 12th after the command.
  return f ? Number(f[11]) + Number(f[12]) : undefined;
}

/**
 * CPU ticks of a process's threads so far, summed by thread name (`/proc/<pid>/task/<tid>/comm`) with trailing digits
 * dropped, so the pool threads of one kind count together: node's main thread (`MainThread`), V8's workers (GC and
 * compilation), libuv's pool, a native library's own threads.
 */
export function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // the process ended
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8')
        .trim()
        .replace(/[\s\d:#-]+$/, '');
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** A process's parent pid; undefined once it has ended. */
export function parentOf(pid: number): number | undefined {
  const f = statFields(pid);
  return f ? Number(f[1]) : undefined;
}

/** Resident memory of a process, MiB: all of it, anonymous, file-backed and shared memory (/proc/<pid>/status). */
export function memoryMiB(pid: number): { rss: number; anon: number; file: number; shmem: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const mib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: mib('VmRSS'), anon: mib('RssAnon'), file: mib('RssFile'), shmem: mib('RssShmem') };
}

/** Every running process's pid. */
export function allPids(): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number);
}

/** The pids of processes whose command name matches. */
export function pidsByComm(comm: RegExp): number[] {
  return allPids().filter((pid) => {
    try {
      return comm.test(readFileSync(`/proc/${pid}/comm`, 'utf8').trim());
    } catch {
      return false; // gone
    }
  });
}
