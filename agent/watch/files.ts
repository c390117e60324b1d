import { createHash } from 'node:crypto';
import { createReadStream, watch, type FSWatcher, type Stats } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { WatchFilesConfig } from '../../contracts/domains/agent-telemetry.ts';
import type { FileChangeIn, FileWatcher, OnFileChanges } from '../collect/types.ts';

export interface FileWatcherOptions {
  /** Quiet time per path before a change is reported: a burst of writes is one event. */
  debounceMs?: number;
  /** Directories watched at most (one inotify watch each); deeper or further directories are left unwatched. */
  maxDirectories?: number;
  /** Events that settle within this window are handed over in one call. */
  batchMs?: number;
}

/** At most this many events per callback (AgentEventBatch's limit). */
const MAX_BATCH = 1_000;

/**
 * Glob-ish patterns for exclude_patterns and sensitive_files: `*` is any run of characters (`/` included), `?` one
 * character, everything else literal; a pattern matches the full path or the base name. `*.log` excludes every log
 * file, `/etc/ssl/*` everything under /etc/ssl, `/etc/shadow` exactly that file.
 */
export function globMatcher(patterns: string[]): (path: string) => boolean {
  const res = patterns.map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*+/g, '.*')
          .replace(/\?/g, '.')}$`,
      ),
  );
  return (path) => {
    const name = basename(path);
    return res.some((re) => re.test(path) || re.test(name));
  };
}

const under = (path: string, root: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** What one armed configuration watches. */
interface Armed {
  config: WatchFilesConfig;
  /** Configured paths, resolved: each is covered with everything beneath it. */
  roots: string[];
  excluded: (path: string) => boolean;
  sensitive: (path: string) => boolean;
  watchers: Map<string, FSWatcher>;
  /** Files known to exist: tells `created` from `modified` and which files a removed directory took with it. */
  known: Set<string>;
  timers: Map<string, NodeJS.Timeout>;
  /** Per path, the report in progress: reports of one path never overlap or reorder. */
  chains: Map<string, Promise<void>>;
  closed: boolean;
}

/**
 * Watches the configured files and directories (directories recursively, one non-recursive fs.watch per directory so
 * excluded subtrees are never walked, and a file's parent directory so a replaced or re-created file is seen) and
 * reports created / modified / deleted files with size and SHA-256. Files larger than max_file_size get no hash;
 * sensitive files never do (`sensitive: true`). A path that does not exist when armed is noticed once it appears, as
 * long as its parent directory exists.
 */
export function createFileWatcher(onChanges: OnFileChanges, opts: FileWatcherOptions = {}): FileWatcher {
  const debounceMs = opts.debounceMs ?? 200;
  const maxDirectories = opts.maxDirectories ?? 4_096;
  const batchMs = opts.batchMs ?? 25;
  let armed: Armed | null = null;
  let outbox: FileChangeIn[] = [];
  let flushTimer: NodeJS.Timeout | null = null;

  const flush = () => {
    flushTimer = null;
    while (outbox.length > 0) onChanges(outbox.splice(0, MAX_BATCH));
  };
  const emit = (event: FileChangeIn) => {
    outbox.push(event);
    flushTimer ??= setTimeout(flush, batchMs);
  };

  const covered = (a: Armed, path: string) => a.roots.some((r) => under(path, r)) && !a.excluded(path);

  function watchDir(a: Armed, dir: string): void {
    if (a.closed || a.watchers.has(dir) || a.watchers.size >= maxDirectories) return;
    let w: FSWatcher;
    try {
      w = watch(dir, { persistent: false }, (_type, name) => {
        if (a.closed || name === null) return;
        const path = join(dir, name.toString());
        if (covered(a, path)) schedule(a, path);
      });
    } catch {
      return; // vanished or unreadable meanwhile
    }
    // A watched directory that is removed ends its watch; the parent's watcher reports the removal.
    w.on('error', () => {
      w.close();
      if (a.watchers.get(dir) === w) a.watchers.delete(dir);
    });
    a.watchers.set(dir, w);
  }

  /** Watches `dir` and every directory beneath it; files found are known (initial arm) or reported as created. */
  async function watchTree(a: Armed, dir: string, report: boolean): Promise<void> {
    watchDir(a, dir);
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (a.closed || a.excluded(path)) continue;
      if (e.isDirectory()) await watchTree(a, path, report);
      else if (report) schedule(a, path);
      else a.known.add(path);
    }
  }

  function schedule(a: Armed, path: string): void {
    clearTimeout(a.timers.get(path));
    a.timers.set(
      path,
      setTimeout(() => {
        a.timers.delete(path);
        void run(a, path);
      }, debounceMs),
    );
  }

  function run(a: Armed, path: string): Promise<void> {
    const next = (a.chains.get(path) ?? Promise.resolve()).then(() => report(a, path)).catch(() => undefined);
    a.chains.set(path, next);
    void next.then(() => {
      if (a.chains.get(path) === next) a.chains.delete(path);
    });
    return next;
  }

  async function report(a: Armed, path: string): Promise<void> {
    let st: Stats | null = null;
    try {
      st = await lstat(path);
      // A link is reported as what it points to; a dangling link is a file without size.
      if (st.isSymbolicLink()) st = await stat(path).catch(() => st);
    } catch {
      st = null;
    }
    const time = new Date().toISOString();
    const sensitive = a.sensitive(path);
    if (st === null) {
      // Gone: the file itself, or a directory with every known file beneath it (a moved-away tree reports no unlinks).
      const gone = a.known.has(path) ? [path] : [...a.known].filter((k) => under(k, path)).sort();
      for (const k of gone) {
        a.known.delete(k);
        emit({
          type: 'file_change',
          time,
          path: k,
          change: 'deleted',
          size_bytes: null,
          sha256: null,
          sensitive: a.sensitive(k),
        });
      }
      for (const [dir, w] of a.watchers) {
        if (!under(dir, path)) continue;
        w.close();
        a.watchers.delete(dir);
      }
      return;
    }
    if (st.isDirectory()) {
      if (!a.watchers.has(path)) await watchTree(a, path, true);
      return;
    }
    const change = a.known.has(path) ? 'modified' : 'created';
    a.known.add(path);
    let hash: string | null = null;
    if (st.isFile() && !sensitive && st.size <= a.config.max_file_size) hash = await sha256(path).catch(() => null);
    emit({
      type: 'file_change',
      time,
      path,
      change,
      size_bytes: st.isFile() ? st.size : null,
      sha256: hash,
      sensitive,
    });
  }

  async function arm(config: WatchFilesConfig): Promise<Armed> {
    const a: Armed = {
      config,
      roots: [...new Set(config.paths.map((p) => resolve(p)))],
      excluded: globMatcher(config.exclude_patterns),
      sensitive: (() => {
        const match = globMatcher(config.sensitive_files);
        const dirs = config.sensitive_files.filter((s) => !/[*?]/.test(s)).map((s) => resolve(s));
        return (path: string) => match(path) || dirs.some((d) => under(path, d));
      })(),
      watchers: new Map(),
      known: new Set(),
      timers: new Map(),
      chains: new Map(),
      closed: false,
    };
    for (const root of a.roots) {
      watchDir(a, dirname(root));
      const st = await stat(root).catch(() => null);
      if (st?.isDirectory()) await watchTree(a, root, false);
      else if (st && !a.excluded(root)) a.known.add(root);
    }
    return a;
  }

  /** Stops watching; reports already waiting out their debounce are made first (they belong to the old set). */
  async function disarm(): Promise<void> {
    const a = armed;
    armed = null;
    if (!a) return;
    // Closed first: the remaining reports below must not arm new watches.
    a.closed = true;
    for (const w of a.watchers.values()) w.close();
    a.watchers.clear();
    const waiting = [...a.timers.keys()];
    for (const t of a.timers.values()) clearTimeout(t);
    a.timers.clear();
    await Promise.all([...waiting.map((p) => run(a, p)), ...a.chains.values()]);
  }

  return {
    async apply(config) {
      await disarm();
      armed = await arm(config);
    },
    async stop() {
      await disarm();
      if (flushTimer) clearTimeout(flushTimer);
      flush();
      outbox = [];
    },
  };
}
