import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * `npm run bench` beside a running `npm start` on one broker: the bench's system must live in a namespace of its own,
 * whatever SVC_NAMESPACE the shell carries, or the two systems' actors answer each other's requests. (How the
 * namespace is chosen: bench-namespace.unit.test.ts.)
 */
describe('bench namespace', () => {
  it('bench/run.ts runs in its own namespace even when started with the default (empty) one', async () => {
    // PostgreSQL on a closed port: the bench stops at its first query, after choosing its namespace.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SVC_NAMESPACE: '',
      SVC_DB_URL: 'postgresql://postgres@127.0.0.1:1/none',
    };
    delete env.SVC_BENCH_NAMESPACE;
    const proc = spawn(process.execPath, ['bench/run.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    expect(code, out).not.toBe(0);
    expect(out).toMatch(/bench: NATS namespace bench \(request subjects bench\.svc\./);
  });
});
