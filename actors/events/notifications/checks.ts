import { NotifyCheckJob } from '../../../contracts/domains/events-notifications.ts';
import { streams } from '../../../contracts/streams.ts';
import { RetryLaterError, runConsumer, type ConsumerHandle } from '../../../platform/jetstream.ts';
import { closeQuietly, escalate, windowEnded, type NotifyDeps } from './incidents.ts';
import { offlineCheck, slaCheck } from './sources.ts';

export const CHECKS_DURABLE = 'events-notify-checks';

/** A pause longer than this is taken in several redeliveries, so a check never waits past a redeployed consumer's ack wait. */
const LONGEST_WAIT_MS = 15 * 60_000;

/**
 * Delayed looks, each at its `not_before`: an agent still offline after its rule's minutes, the next escalation step,
 * the end of the maintenance window that held a notification back. Each is idempotent (the state it finds decides),
 * so a check repeated after a crash does nothing twice.
 */
export function startChecks(deps: NotifyDeps): Promise<ConsumerHandle> {
  return runConsumer({
    nc: deps.nc,
    stream: streams.SVC_WORK.name,
    durable: CHECKS_DURABLE,
    filterSubjects: ['svc.work.events.notify_check'],
    schema: NotifyCheckJob,
    concurrency: 16,
    maxAckPending: 50_000,
    // Long waits take a redelivery per LONGEST_WAIT_MS: a week's window fits.
    maxDeliver: 1_000,
    backoffMs: [500, 2_000, 10_000, 30_000],
    log: deps.log,
    handler: async (job) => {
      const wait = Date.parse(job.not_before) - deps.clock.now();
      if (wait > 0) throw new RetryLaterError('not yet', Math.min(wait, LONGEST_WAIT_MS));
      if (job.kind === 'offline') await offlineCheck(deps, job);
      else if (job.kind === 'escalate') await escalate(deps, job.notification_id, job.step);
      else if (job.kind === 'sla_warn') await slaCheck(deps, job);
      else if (job.kind === 'close') await closeQuietly(deps, job.notification_id);
      else await windowEnded(deps, job.notification_id);
    },
  });
}
