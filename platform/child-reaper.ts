/**
 * Process groups of helper programs this process started in groups of their own (Chromium, which puppeteer starts
 * detached). They do not get the signals sent to our process group and are not ended by our death, so whatever way
 * this process exits — process.exit after a failed start-up, a forced shutdown, an uncaught error — each remaining
 * group is killed on the 'exit' event (synchronous, so no polite close there). The orderly path closes them first.
 */
const groups = new Set<number>();
let hooked = false;

/** Kills the process group led by `pid` when this process exits; the returned function forgets it again. */
export function killGroupOnExit(pid: number): () => void {
  groups.add(pid);
  if (!hooked) {
    hooked = true;
    process.on('exit', killRemainingGroups);
  }
  return () => {
    groups.delete(pid);
  };
}

/** SIGKILL to the process group led by `pid`; false when it no longer exists. */
export function killGroup(pid: number): boolean {
  try {
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

function killRemainingGroups(): void {
  for (const pid of groups) killGroup(pid);
  groups.clear();
}
