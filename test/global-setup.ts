import { rm } from 'node:fs/promises';

/** Removes this run's private analytics directory (see vitest.config.ts) when the run ends. */
export default function setup(): () => Promise<void> {
  return async () => {
    const path = process.env.SVC_ANALYTICS_PATH;
    if (path && path.includes('/runs/')) await rm(path, { recursive: true, force: true });
  };
}
