/**
 * User Timing marks at the moments a person waits for (the sign-in form usable, the first rows of the hosts table,
 * a chart drawn): the bench's `web` part reads them from the page, and so can any real-user monitoring. One mark per
 * name and page load: later renders of the same view are not what anyone waited for.
 */
const marked = new Set<string>();

export function markOnce(name: string, detail?: Record<string, unknown>): void {
  if (marked.has(name) || typeof performance === 'undefined') return;
  marked.add(name);
  performance.mark(name, detail ? { detail } : undefined);
}
