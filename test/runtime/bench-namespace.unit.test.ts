import { afterEach, describe, expect, it } from 'vitest';
import { namespace, setNamespace, wireRequestSubject } from '../../platform/namespace.ts';
import { useBenchNamespace } from '../../bench/namespace.ts';

/**
 * `npm run bench` beside a running `npm start` on one broker: the bench's system must live in a namespace of its own,
 * whatever SVC_NAMESPACE the shell carries, or the two systems' actors answer each other's requests. (bench/run.ts
 * itself, started as a process: bench-namespace.test.ts.)
 */
describe('bench namespace', () => {
  const before = namespace();
  afterEach(() => setNamespace(before));

  it('defaults to `bench`, ignoring the SVC_NAMESPACE of the system it runs beside, and hands it to its children', () => {
    const env: NodeJS.ProcessEnv = { SVC_NAMESPACE: '' };
    expect(useBenchNamespace(env)).toBe('bench');
    expect(env.SVC_NAMESPACE).toBe('bench');
    expect(wireRequestSubject('svc.fleet.clients.list')).toBe('bench.svc.fleet.clients.list');
    const staging: NodeJS.ProcessEnv = { SVC_NAMESPACE: 'staging' };
    expect(useBenchNamespace(staging)).toBe('bench');
    expect(staging.SVC_NAMESPACE).toBe('bench');
  });

  it('takes SVC_BENCH_NAMESPACE when set, and does not pass that name on', () => {
    const env: NodeJS.ProcessEnv = { SVC_BENCH_NAMESPACE: 'bench2' };
    expect(useBenchNamespace(env)).toBe('bench2');
    expect(env).toEqual({ SVC_NAMESPACE: 'bench2' });
    expect(() => useBenchNamespace({ SVC_BENCH_NAMESPACE: 'no spaces' })).toThrow(/namespace/);
  });
});
