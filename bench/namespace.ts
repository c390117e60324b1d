import { setNamespace } from '../platform/namespace.ts';

/**
 * The bench runs a system of its own (its database, actors and gateway) on whatever broker is configured, often the one
 * a running `npm start` uses. A namespace of its own keeps the two apart: otherwise their actors share queue groups and
 * each system answers the other's requests (with another database and secret). SVC_NAMESPACE is ignored here: it names
 * the other system's namespace when set. SVC_BENCH_NAMESPACE overrides the default `bench`.
 */
export const DEFAULT_BENCH_NAMESPACE = 'bench';

/** Sets the bench's namespace for this process and, through `env`, for the processes it starts. Returns it. */
export function useBenchNamespace(env: NodeJS.ProcessEnv = process.env): string {
  const ns = env.SVC_BENCH_NAMESPACE || DEFAULT_BENCH_NAMESPACE;
  setNamespace(ns); // throws on a malformed value, before anything connects
  env.SVC_NAMESPACE = ns;
  // The children read SVC_NAMESPACE; an SVC_* name they do not know would only earn a warning.
  delete env.SVC_BENCH_NAMESPACE;
  return ns;
}
