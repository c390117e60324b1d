// PLACEHOLDER (wip-agent): the real file watcher is written on another branch and replaces this file at the merge.
// It accepts configs and reports nothing, so the agent's config handling can run until then.
import type { FileWatcher, OnFileChanges } from '../collect/types.ts';

export function createFileWatcher(_onChanges: OnFileChanges): FileWatcher {
  return {
    apply: async () => undefined,
    stop: async () => undefined,
  };
}
