import { describe, expect, it } from 'vitest';
import type { TelemetryKind } from '../../contracts/domains/agent-telemetry.ts';
import { createLogger } from '../../platform/logger.ts';
import {
  Outbox,
  interpretPubAck,
  type OutboxMessage,
  type OutboxOptions,
  type SendResult,
} from '../../agent/outbox.ts';
import { sleep, waitFor } from '../support/processes.ts';

/** The agent's outbox on its own: bounds, latest-only kinds, order, retries with the same id. */

const log = createLogger('silent');
const encoder = new TextEncoder();

/** A sender the test answers by hand: every call waits until the test settles it. */
class FakeSend {
  readonly calls: { msg: OutboxMessage; settle: (r: SendResult) => void }[] = [];
  readonly send = (msg: OutboxMessage): Promise<SendResult> =>
    new Promise((settle) => this.calls.push({ msg, settle }));
  ids(): string[] {
    return this.calls.map((c) => c.msg.id);
  }
  /** Answers every call not answered yet. */
  settleAll(result: SendResult = { outcome: 'stored', duplicate: false }): void {
    for (const c of this.calls.splice(0)) c.settle(result);
  }
}

let ready = true;
function outbox(fake: FakeSend, extra: Partial<OutboxOptions> = {}): Outbox {
  return new Outbox({ send: fake.send, ready: () => ready, log, retryMinMs: 20, retryMaxMs: 40, ...extra });
}
let n = 0;
const msg = (
  kind: TelemetryKind,
  bytes = 10,
): { id: string; kind: TelemetryKind; subject: string; data: Uint8Array } => ({
  id: `a:${kind}:${++n}`,
  kind,
  subject: `svc.agent.a.${kind}`,
  data: encoder.encode('x'.repeat(bytes)),
});
const tick = (): Promise<void> => sleep(5);

describe('outbox', () => {
  it('sends in the order added and forgets a message only once it is stored', async () => {
    ready = true;
    const fake = new FakeSend();
    const box = outbox(fake, { maxInFlight: 2 });
    const a = msg('heartbeat');
    const b = msg('metrics');
    const c = msg('metrics');
    box.add(a);
    box.add(b);
    box.add(c);
    await tick();
    // At most two on the wire at once, oldest first.
    expect(fake.ids()).toEqual([a.id, b.id]);
    expect(box.stats().pending).toBe(3);
    fake.calls.shift()!.settle({ outcome: 'stored', duplicate: false });
    await tick();
    expect(fake.ids()).toEqual([b.id, c.id]);
    fake.settleAll();
    await tick();
    expect(box.stats()).toMatchObject({ pending: 0, pendingBytes: 0, inFlight: 0 });
    expect(box.stats().kinds.metrics).toMatchObject({ added: 2, stored: 2 });
  });

  it('holds everything while the link is down and sends it, in order, when it comes back', async () => {
    ready = false;
    const fake = new FakeSend();
    const box = outbox(fake);
    const added = [msg('metrics'), msg('events'), msg('metrics')];
    for (const m of added) box.add(m);
    await tick();
    expect(fake.calls).toHaveLength(0);
    ready = true;
    box.resume();
    await tick();
    expect(fake.ids()).toEqual(added.map((m) => m.id));
    fake.settleAll();
    expect(await box.flush(1000)).toBe(true);
  });

  it('retries a message that was not acknowledged with the same id, after a backoff', async () => {
    ready = true;
    const fake = new FakeSend();
    const box = outbox(fake);
    const m = msg('metrics');
    box.add(m);
    await tick();
    fake.settleAll({ outcome: 'retry', reason: 'timeout' });
    await tick();
    expect(fake.calls).toHaveLength(0);
    await waitFor(() => fake.calls.length === 1, 1000, 'the retry');
    expect(fake.calls[0]!.msg.id).toBe(m.id);
    expect(fake.calls[0]!.msg.attempts).toBe(2);
    fake.settleAll({ outcome: 'stored', duplicate: true });
    await tick();
    expect(box.stats().kinds.metrics).toMatchObject({ stored: 1, duplicates: 1 });
    expect(box.stats().sendFailures).toBe(1);
  });

  it('a sender that throws is a retry, not a lost message', async () => {
    ready = true;
    let calls = 0;
    const box = new Outbox({
      send: async () => {
        if (++calls === 1) throw new Error('boom');
        return { outcome: 'stored', duplicate: false };
      },
      ready: () => true,
      log,
      retryMinMs: 10,
      retryMaxMs: 10,
    });
    box.add(msg('events'));
    expect(await box.flush(2000)).toBe(true);
    expect(calls).toBe(2);
  });

  it('drops a message the stream refuses for good and goes on with the next', async () => {
    ready = true;
    const fake = new FakeSend();
    const box = outbox(fake, { maxInFlight: 1 });
    const big = msg('inventory');
    const next = msg('metrics');
    box.add(big);
    box.add(next);
    await tick();
    fake.settleAll({ outcome: 'reject', reason: 'message size exceeds maximum allowed' });
    await tick();
    expect(fake.ids()).toEqual([next.id]);
    expect(box.stats().kinds.inventory).toMatchObject({ rejected: 1, stored: 0 });
  });

  it('keeps at most one pending inventory snapshot and one pending heartbeat: the newest', async () => {
    ready = false;
    const fake = new FakeSend();
    const box = outbox(fake);
    box.add(msg('inventory'));
    box.add(msg('heartbeat'));
    box.add(msg('metrics'));
    const inv2 = msg('inventory');
    const hb2 = msg('heartbeat');
    box.add(inv2);
    box.add(hb2);
    expect(box.pending().map((p) => p.kind)).toEqual(['metrics', 'inventory', 'heartbeat']);
    expect(box.pending().map((p) => p.id)).toContain(inv2.id);
    expect(box.pending().map((p) => p.id)).toContain(hb2.id);
    expect(box.stats().kinds.inventory.replaced).toBe(1);
    expect(box.stats().kinds.heartbeat.replaced).toBe(1);
  });

  it('forgets a snapshot already on the wire when it fails and a newer one is waiting', async () => {
    ready = true;
    const fake = new FakeSend();
    const box = outbox(fake, { maxInFlight: 1 });
    const old = msg('inventory');
    box.add(old);
    await tick();
    expect(fake.ids()).toEqual([old.id]);
    const fresh = msg('inventory');
    box.add(fresh);
    fake.settleAll({ outcome: 'retry', reason: 'timeout' });
    await waitFor(() => fake.calls.length === 1, 1000, 'the next send');
    expect(fake.ids()).toEqual([fresh.id]);
    expect(box.pending().map((p) => p.id)).toEqual([fresh.id]);
  });

  it('when full by count, drops the oldest metrics first, then the oldest events, then the oldest of anything', async () => {
    ready = false;
    const fake = new FakeSend();
    const box = outbox(fake, { maxMessages: 4 });
    const e1 = msg('events');
    const m1 = msg('metrics');
    const hb = msg('heartbeat');
    const m2 = msg('metrics');
    for (const m of [e1, m1, hb, m2]) box.add(m);
    const e2 = msg('events');
    box.add(e2);
    expect(box.pending().map((p) => p.id)).toEqual([e1.id, hb.id, m2.id, e2.id]);
    const e3 = msg('events');
    box.add(e3);
    expect(box.pending().map((p) => p.id)).toEqual([e1.id, hb.id, e2.id, e3.id]);
    const e4 = msg('events');
    box.add(e4);
    expect(box.pending().map((p) => p.id)).toEqual([hb.id, e2.id, e3.id, e4.id]);
    expect(box.stats().kinds.metrics.dropped).toBe(2);
    expect(box.stats().kinds.events.dropped).toBe(1);
    // Nothing but the newest of the latest-only kinds is left to drop: anything oldest goes.
    const box2 = outbox(fake, { maxMessages: 2 });
    const i1 = msg('inventory');
    const h1 = msg('heartbeat');
    box2.add(i1);
    box2.add(h1);
    const e5 = msg('events');
    box2.add(e5);
    expect(box2.pending().map((p) => p.id)).toEqual([h1.id, e5.id]);
  });

  it('when full by bytes, drops metrics until the new message fits; one larger than the whole outbox is refused', async () => {
    ready = false;
    const fake = new FakeSend();
    const box = outbox(fake, { maxBytes: 1_000 });
    for (let i = 0; i < 5; i++) box.add(msg('metrics', 150));
    expect(box.stats().pending).toBe(5);
    const inv = msg('inventory', 500);
    box.add(inv);
    const st = box.stats();
    expect(st.pendingBytes).toBeLessThanOrEqual(1_000);
    expect(box.pending().map((p) => p.kind)).toContain('inventory');
    expect(st.kinds.metrics.dropped).toBeGreaterThanOrEqual(2);
    expect(box.add(msg('inventory', 2_000))).toBe(false);
    expect(box.pending().map((p) => p.id)).toContain(inv.id);
    expect(box.stats().kinds.inventory.dropped).toBe(1);
  });

  it('holds 10,000 messages / 64 MB by default', () => {
    ready = false;
    const box = outbox(new FakeSend());
    for (let i = 0; i < 10_050; i++) box.add(msg('metrics', 1));
    expect(box.stats().pending).toBe(10_000);
    expect(box.stats().kinds.metrics.dropped).toBe(50);
    const big = new Outbox({ send: new FakeSend().send, ready: () => false, log });
    for (let i = 0; i < 70; i++) big.add(msg('metrics', 1024 * 1024));
    expect(big.stats().pendingBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(big.stats().pending).toBeLessThan(64);
  });

  it('flush resolves false when the link stays down, true once everything is stored', async () => {
    ready = false;
    const fake = new FakeSend();
    const box = outbox(fake);
    box.add(msg('metrics'));
    expect(await box.flush(50)).toBe(false);
    ready = true;
    const flushed = box.flush(1000);
    await tick();
    fake.settleAll();
    expect(await flushed).toBe(true);
  });
});

describe('PubAck replies', () => {
  const ack = (v: unknown): SendResult => interpretPubAck(encoder.encode(JSON.stringify(v)));
  it('stored, duplicate, retryable and final errors', () => {
    expect(ack({ stream: 'SVC_TELEMETRY', seq: 4 })).toEqual({ outcome: 'stored', duplicate: false });
    expect(ack({ stream: 'SVC_TELEMETRY', seq: 4, duplicate: true })).toEqual({ outcome: 'stored', duplicate: true });
    expect(ack({ error: { code: 503, err_code: 10077, description: 'insufficient resources' } })).toMatchObject({
      outcome: 'retry',
    });
    expect(
      ack({ error: { code: 400, err_code: 10054, description: 'message size exceeds maximum allowed' } }),
    ).toMatchObject({ outcome: 'reject' });
    expect(interpretPubAck(encoder.encode('not json'))).toMatchObject({ outcome: 'retry' });
    expect(ack({ hello: 1 })).toMatchObject({ outcome: 'retry' });
  });
});
