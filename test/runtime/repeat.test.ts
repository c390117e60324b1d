import type { NatsConnection } from '@nats-io/transport-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { sleep } from '../support/processes.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testSigner } from '../support/env.ts';

/**
 * An actor instance SIGKILLed with requests in flight. NATS never tells the requester; without a
 * repeat every such request waits its whole deadline (10 s, then 504). Safe subjects are repeated once after a short
 * wait, and the queue group routes the repeat to the instance still serving.
 */

const log = createLogger('silent');
const NATS = NATS_URL;
let nc: NatsConnection;
let host: ActorHost<TestCat>;
let child: ChildProcess | undefined;
const ctx = () => anonymousContext(randomUUID());

beforeAll(async () => {
  nc = await connectNats(NATS, 'repeat-test', log, NATS_CREDS, NATS_CA);
  host = new ActorHost(nc, testCatalogue, testSigner(), log);
  await host.serve('rtest', 'rtest-read-local', {
    'svc.rtest.read': async ({ ms }) => {
      await sleep(ms);
      return { instance: 'local' };
    },
    'svc.rtest.sleep': async ({ ms }) => {
      await sleep(ms);
      return { slept: ms };
    },
  });
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await host.drain(100);
  await nc.drain();
});

async function startChild(): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ['test/fixtures/read-actor.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    proc.once('exit', (code) => reject(new Error(`fixture exited early: ${code}`)));
  });
  return proc;
}

describe('a SIGKILLed actor under read load', () => {
  it('costs its in-flight safe calls a short delay, not the deadline', async () => {
    child = await startChild();
    const caller = new Caller(() => nc, testCatalogue, testSigner(), 10_000);
    const latencies: number[] = [];
    const failures: string[] = [];
    const served = new Set<string>();
    let stop = false;
    const worker = async (): Promise<void> => {
      while (!stop) {
        const t0 = Date.now();
        try {
          served.add((await caller.call('svc.rtest.read', { ms: 100 }, ctx())).instance);
        } catch (err) {
          failures.push(String((err as { code?: string }).code ?? err));
        }
        latencies.push(Date.now() - t0);
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    await sleep(700);
    expect(served).toEqual(new Set(['local', 'child']));
    const killedAt = Date.now();
    child.kill('SIGKILL');
    await sleep(1_800);
    stop = true;
    await Promise.all(workers);
    expect(failures).toEqual([]);
    // In-flight requests on the killed instance waited the repeat delay (1 s) plus one more answer, not the 10 s
    // deadline (bounds wide enough for a loaded machine, far below what waiting for the deadline takes).
    expect(Math.max(...latencies)).toBeLessThan(5_000);
    expect(Date.now() - killedAt).toBeLessThan(6_000);
  });

  it('does not repeat subjects that are not marked safe', async () => {
    let calls = 0;
    const counting = new ActorHost(nc, testCatalogue, testSigner(), log);
    // A second instance counting its own sleeps: a repeat would land here or on the local one.
    await counting.serve('rtest', 'rtest-count', {
      'svc.rtest.sleep': async ({ ms }) => {
        calls++;
        await sleep(ms);
        return { slept: ms };
      },
    });
    const caller = new Caller(() => nc, testCatalogue, testSigner(), 10_000, 100);
    for (let i = 0; i < 6; i++) await caller.call('svc.rtest.sleep', { ms: 300 }, ctx());
    await counting.drain(100);
    // Six calls spread over two instances; none was sent twice (a repeat after 100 ms would add six more).
    expect(calls).toBeLessThanOrEqual(6);
  });

  it('repeats a slow safe call and takes the first answer', async () => {
    const caller = new Caller(() => nc, testCatalogue, testSigner(), 10_000, 200);
    const t0 = Date.now();
    await expect(caller.call('svc.rtest.read', { ms: 500 }, ctx())).resolves.toEqual({ instance: 'local' });
    // The first attempt answered at ~500 ms; the repeat (sent at 200 ms) did not delay it.
    expect(Date.now() - t0).toBeLessThan(1_400);
  });
});
