import { createHash } from 'node:crypto';
import { createReadStream, watch, type FSWatcher, type Stats } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { WatchFilesConfig } from '../../contracts/domains/agent-telemetry.ts';
import type { FileChangeIn } from '../collect/types.ts';
import { globMatcher, under } from './glob.ts';

export interface WatchSetOptions {
  /** Quiet time per path before a change is reported: a burst of writes is one event. */
  debounceMs: number;
  /** Directories watched at most (one inotify watch each); deeper or further directories are left unwatched. */
  maxDirectories: number;
  /** Where each change goes. */
  emit: (event: FileChangeIn) => void;
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Sensitive paths: the patterns, and every path beneath a sensitive entry without wildcards (a directory). */
function sensitiveMatcher(patterns: string[]): (path: string) => boolean {
  const match = globMatcher(patterns);
  const dirs = patterns.filter((s) => !/[*?]/.test(s)).map((s) => resolve(s));
  return (path: string) => match(path) || dirs.some((d) => under(path, d));
}

/** What one armed configuration watches, from `arm` until `close`. */
export class WatchSet {
  private readonly config: WatchFilesConfig;
  /** Configured paths, resolved: each is covered with everything beneath it. */
  private readonly roots: string[];
  private readonly excluded: (path: string) => boolean;
  private readonly sensitive: (path: string) => boolean;
  private readonly watchers = new Map<string, FSWatcher>();
  /** Files known to exist: tells `created` from `modified` and which files a removed directory took with it. */
  private readonly known = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Per path, the report in progress: reports of one path never overlap or reorder. */
  private readonly chains = new Map<string, Promise<void>>();
  private closed = false;

  private readonly opts: WatchSetOptions;
  private constructor(config: WatchFilesConfig, opts: WatchSetOptions) {
    this.config = config;
    this.opts = opts;
    this.roots = [...new Set(config.paths.map((p) => resolve(p)))];
    this.excluded = globMatcher(config.exclude_patterns);
    this.sensitive = sensitiveMatcher(config.sensitive_files);
  }

  /** Watches what `config` names; resolves once every watch is in place and the existing files are known. */
  static async arm(config: WatchFilesConfig, opts: WatchSetOptions): Promise<WatchSet> {
    const set = new WatchSet(config, opts);
    for (const root of set.roots) {
      set.watchDir(dirname(root));
      const st = await stat(root).catch(() => null);
      if (st?.isDirectory()) await set.watchTree(root, false);
      else if (st && !set.excluded(root)) set.known.add(root);
    }
    return set;
  }

  /** Stops watching; reports already waiting out their debounce are made first (they belong to this set). */
  async close(): Promise<void> {
    // Closed first: the remaining reports below must not arm new watches.
    this.closed = true;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    const waiting = [...this.timers.keys()];
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...waiting.map((p) => this.run(p)), ...this.chains.values()]);
  }

  private covered(path: string): boolean {
    return this.roots.some((r) => under(path, r)) && !this.excluded(path);
  }

  private watchDir(dir: string): void {
    if (this.closed || this.watchers.has(dir) || this.watchers.size >= this.opts.maxDirectories) return;
    let w: FSWatcher;
    try {
      w = watch(dir, { persistent: false }, (_type, name) => {
        if (this.closed || name === null) return;
        const path = join(dir, name.toString());
        if (this.covered(path)) this.schedule(path);
      });
    } catch {
      return; // vanished or unreadable meanwhile
    }
    // A watched directory that is removed ends its watch; the parent's watcher reports the removal.
    w.on('error', () => {
      w.close();
      if (this.watchers.get(dir) === w) this.watchers.delete(dir);
    });
    this.watchers.set(dir, w);
  }

  /** Watches `dir` and every directory beneath it; files found are known (initial arm) or reported as created. */
  private async watchTree(dir: string, report: boolean): Promise<void> {
    this.watchDir(dir);
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (this.closed || this.excluded(path)) continue;
      if (e.isDirectory()) await this.watchTree(path, report);
      else if (report) this.schedule(path);
      else this.known.add(path);
    }
  }

  private schedule(path: string): void {
    clearTimeout(this.timers.get(path));
    this.timers.set(
      path,
      setTimeout(() => {
        this.timers.delete(path);
        void this.run(path);
      }, this.opts.debounceMs),
    );
  }

  private run(path: string): Promise<void> {
    const next = (this.chains.get(path) ?? Promise.resolve()).then(() => this.report(path)).catch(() => undefined);
    this.chains.set(path, next);
    void next.then(() => {
      if (this.chains.get(path) === next) this.chains.delete(path);
    });
    return next;
  }

  private async report(path: string): Promise<void> {
    let st: Stats | null = null;
    try {
      st = await lstat(path);
      // A link is reported as what it points to; a dangling link is a file without size.
      if (st.isSymbolicLink()) st = await stat(path).catch(() => st);
    } catch {
      st = null;
    }
    const time = new Date().toISOString();
    if (st === null) {
      this.reportGone(path, time);
      return;
    }
    if (st.isDirectory()) {
      if (!this.watchers.has(path)) await this.watchTree(path, true);
      return;
    }
    const sensitive = this.sensitive(path);
    const change = this.known.has(path) ? 'modified' : 'created';
    this.known.add(path);
    let hash: string | null = null;
    if (st.isFile() && !sensitive && st.size <= this.config.max_file_size) hash = await sha256(path).catch(() => null);
    this.opts.emit({
      type: 'file_change',
      time,
      path,
      change,
      size_bytes: st.isFile() ? st.size : null,
      sha256: hash,
      sensitive,
    });
  }

  /** Gone: the file itself, or a directory with every known file beneath it (a moved-away tree reports no unlinks). */
  private reportGone(path: string, time: string): void {
    const gone = this.known.has(path) ? [path] : [...this.known].filter((k) => under(k, path)).sort();
    for (const k of gone) {
      this.known.delete(k);
      this.opts.emit({
        type: 'file_change',
        time,
        path: k,
        change: 'deleted',
        size_bytes: null,
        sha256: null,
        sensitive: this.sensitive(k),
      });
    }
    for (const [dir, w] of this.watchers) {
      if (!under(dir, path)) continue;
      w.close();
      this.watchers.delete(dir);
    }
  }
}
