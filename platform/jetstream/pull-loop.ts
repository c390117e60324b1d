import { setTimeout as wait } from 'node:timers/promises';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { Subscription } from '@nats-io/transport-node';
import type { Logger } from '../logger.ts';
import type { ConsumerRun } from './consumer-run.ts';
import type { Settle } from './settle.ts';

/**
 * Pulls messages and starts a handler for each, at most `concurrency` at once, until `stop()`. A failure (the
 * connection lost, the durable deleted) reopens the messages after a backoff; a closed connection ends it.
 */
export async function pullLoop<T>(
  run: ConsumerRun<T>,
  open: () => Promise<ConsumerMessages>,
  handleMessage: (m: JsMsg) => Promise<void>,
  settle: Settle,
): Promise<void> {
  const { nc, concurrency, log, stopping, inflight } = run;
  // Woken when a handler finishes: waiting on Promise.race(inflight) instead added a reaction to every in-flight
  // handler for each message that arrived at the cap.
  let slotFreed: (() => void) | undefined;
  const freeSlot = (): Promise<void> => new Promise<void>((resolve) => (slotFreed = resolve));
  let failures = 0;
  while (!stopping.signal.aborted) {
    if (nc.isClosed()) {
      log.warn('connection closed; consumer loop ends');
      return;
    }
    try {
      const messages = await open();
      run.current = messages;
      if (stopping.signal.aborted) {
        await messages.close().catch(() => undefined);
        return;
      }
      watchStatus(messages, log);
      const advisory = repullOnNewLeader(run, messages);
      failures = 0;
      try {
        await consumeAll(messages);
      } finally {
        advisory?.unsubscribe();
      }
    } catch (err) {
      if (stopping.signal.aborted) return;
      log.error({ err }, 'consumer loop failed; restarting');
    }
    if (!stopping.signal.aborted)
      await wait(Math.min(250 * 2 ** failures++, 10_000), undefined, { signal: stopping.signal }).catch(
        () => undefined,
      );
  }

  async function consumeAll(messages: ConsumerMessages): Promise<void> {
    for await (const m of messages) {
      if (!stopping.signal.aborted) {
        while (inflight.size >= concurrency) await freeSlot();
      }
      if (stopping.signal.aborted) {
        // Fetched but not started: hand it back now so another instance takes it without waiting ack_wait.
        settle(m, 'nak');
        continue;
      }
      const p = handleMessage(m)
        .catch((err: unknown) => log.error({ err, seq: m.seq }, 'message processing failed'))
        .finally(() => {
          inflight.delete(p);
          const wake = slotFreed;
          slotFreed = undefined;
          wake?.();
        });
      inflight.add(p);
    }
  }
}

/** What repullOnNewLeader touches of nats.js's consume() iterator (jetstream 3.x, pinned in package-lock.json). */
interface PullState {
  resetPending: () => Promise<boolean>;
  inReset: boolean;
}

/**
 * Pulls again the moment the durable has a new leader. nats-server 2.9 forgets the pull requests its old leader held,
 * and the client's own check (two missed idle heartbeats, then a consumer info that fails until the election is over,
 * retried after the pull expiry) comes seconds later. The advisory comes from the new leader once it leads, so the
 * consumer check it triggers succeeds at once.
 */
function repullOnNewLeader<T>(run: ConsumerRun<T>, messages: ConsumerMessages): Subscription | undefined {
  const state = messages as unknown as Partial<PullState>;
  // Another nats.js release without these: its own heartbeat check remains.
  if (typeof state.resetPending !== 'function' || typeof state.inReset !== 'boolean') return undefined;
  const reset = state.resetPending.bind(messages);
  return run.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.${run.stream}.${run.durable}`, {
    callback: (err) => {
      if (err) return;
      run.log.info('durable has a new leader; pulling again');
      // A check already waiting out its back-off would swallow this one.
      state.inReset = false;
      reset().catch(() => undefined);
    },
  });
}

function watchStatus(messages: ConsumerMessages, log: Logger): void {
  void (async () => {
    for await (const s of messages.status()) {
      if (s.type === 'consumer_deleted' || s.type === 'consumer_not_found') {
        // consume() would only poll; closing makes the loop recreate the durable.
        log.warn({ status: s.type }, 'durable consumer gone; reopening');
        await messages.close();
        return;
      }
      if (s.type === 'heartbeats_missed' || s.type === 'stream_not_found' || s.type === 'no_responders')
        log.warn({ status: s }, 'consumer status');
    }
  })().catch((err: unknown) => log.warn({ err }, 'consumer status watcher ended'));
}
