/**
 * Optional isolation of several systems sharing one NATS server (concurrent test runs, side-by-side staging):
 * with SVC_NAMESPACE=ns, request subjects travel as `ns.svc.<domain>.<verb>`, durable subjects as
 * `svc.evt.ns.<name>` / `svc.work.ns.<name>` (still inside the declared streams), and durable consumers are named
 * `<durable>-ns`. Empty (the default) leaves every subject exactly as the catalogue and the specs name it.
 */
const NS = /^[a-z0-9_-]{1,32}$/i;

// Read at import so every module agrees from the start; a malformed value is left to the config check
// (loadConfig names SVC_NAMESPACE), and main.ts sets the validated value with setNamespace before anything connects.
const fromEnv = process.env.SVC_NAMESPACE ?? '';
let current = NS.test(fromEnv) ? fromEnv : '';

export const namespace = (): string => current;

export function setNamespace(ns: string): void {
  if (ns && !NS.test(ns)) throw new Error('namespace must be 1-32 letters, digits, _ or -');
  current = ns;
}

export const wireRequestSubject = (subject: string): string => (current ? `${current}.${subject}` : subject);

export function wireDurableSubject(subject: string): string {
  if (!current) return subject;
  const [svc, kind, ...rest] = subject.split('.');
  if (svc !== 'svc' || (kind !== 'evt' && kind !== 'work')) return subject;
  return [svc, kind, current, ...rest].join('.');
}

export const wireDurableName = (durable: string): string => (current ? `${durable}-${current}` : durable);
