import { execFile } from 'node:child_process';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/** Where the collectors read the machine: overridable so parsers can be exercised on a copied or synthetic tree. */
export interface Roots {
  proc: string;
  sys: string;
  etc: string;
  /** /var: dpkg status, crontabs, the Docker socket. */
  var: string;
}

export const DEFAULT_ROOTS: Roots = { proc: '/proc', sys: '/sys', etc: '/etc', var: '/var' };

/** The file's text, or null when it is absent or unreadable (a missing source is an empty part, never a failure). */
export async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

export async function readTrimmed(path: string): Promise<string | null> {
  const text = await readText(path);
  return text === null ? null : text.trim();
}

/** A sysfs/procfs number, or null (absent, unreadable, not a number, or EINVAL as `speed` gives on virtual links). */
export async function readNumber(path: string): Promise<number | null> {
  const text = await readTrimmed(path);
  if (text === null || text === '') return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}

export async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch {
    return [];
  }
}

export async function readLink(path: string): Promise<string | null> {
  try {
    return await readlink(path);
  } catch {
    return null;
  }
}

/** Numeric entries of /proc: the pids alive at the time of the listing. */
export async function listPids(proc: string): Promise<number[]> {
  return (await listDir(proc)).filter((n) => /^\d+$/.test(n)).map(Number);
}

export const procPath = (proc: string, pid: number, file: string): string => join(proc, String(pid), file);

export interface CommandResult {
  stdout: string;
  stderr: string;
  code: number;
}

/**
 * Runs a tool with a deadline. Null when the tool is not installed (ENOENT) or could not start; a non-zero exit is a
 * result (the caller decides, e.g. systemctl without systemd as PID 1).
 */
export function run(file: string, args: string[], timeoutMs = 2_000): Promise<CommandResult | null> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr, code: 0 });
        const e = err as NodeJS.ErrnoException & { code?: string | number };
        if (typeof e.code === 'string') return resolve(null);
        resolve({ stdout, stderr, code: typeof e.code === 'number' ? e.code : 1 });
      },
    );
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `fn`, turning any failure into `fallback`: one unreadable source never fails the whole collection. */
export async function orElse<T>(fn: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await fn();
  } catch {
    return fallback;
  }
}

/** Splits a text file into non-empty trimmed lines. */
export const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** /proc/meminfo as kB values by key (MemTotal, MemAvailable, SwapTotal, ...). */
export function parseMeminfo(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\w[\w()]*):\s+(\d+)/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

export async function memTotalBytes(proc: string): Promise<number> {
  const text = await readText(join(proc, 'meminfo'));
  return text === null ? 0 : (parseMeminfo(text).get('MemTotal') ?? 0) * 1024;
}

/** The clock tick the kernel reports times in (USER_HZ): 100 on every Linux architecture in practice. */
export const CLK_TCK = 100;
