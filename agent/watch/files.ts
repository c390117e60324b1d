import type { FileChangeIn, FileWatcher, OnFileChanges } from '../collect/types.ts';
import { WatchSet } from './watch-set.ts';

export { globMatcher } from './glob.ts';

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
 * Watches the configured files and directories (directories recursively, one non-recursive fs.watch per directory so
 * excluded subtrees are never walked, and a file's parent directory so a replaced or re-created file is seen) and
 * reports created / modified / deleted files with size and SHA-256. Files larger than max_file_size get no hash;
 * sensitive files never do (`sensitive: true`). A path that does not exist when armed is noticed once it appears, as
 * long as its parent directory exists.
 */
export function createFileWatcher(onChanges: OnFileChanges, opts: FileWatcherOptions = {}): FileWatcher {
  const batchMs = opts.batchMs ?? 25;
  let armed: WatchSet | null = null;
  let outbox: FileChangeIn[] = [];
  let flushTimer: NodeJS.Timeout | null = null;

  const flush = () => {
    flushTimer = null;
    while (outbox.length > 0) onChanges(outbox.splice(0, MAX_BATCH));
  };
  const setOptions = {
    debounceMs: opts.debounceMs ?? 200,
    maxDirectories: opts.maxDirectories ?? 4_096,
    emit: (event: FileChangeIn) => {
      outbox.push(event);
      flushTimer ??= setTimeout(flush, batchMs);
    },
  };

  /** Stops watching; reports already waiting out their debounce are made first (they belong to the old set). */
  async function disarm(): Promise<void> {
    const set = armed;
    armed = null;
    await set?.close();
  }

  return {
    async apply(config) {
      await disarm();
      armed = await WatchSet.arm(config, setOptions);
    },
    async stop() {
      await disarm();
      if (flushTimer) clearTimeout(flushTimer);
      flush();
      outbox = [];
    },
  };
}
