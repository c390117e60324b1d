import type { DomainContext, DomainHandle, DomainModule } from '../../platform/domain.ts';
import { AuditRecorder } from '../../platform/audit.ts';
import type { ConsumerHandle } from '../../platform/jetstream.ts';
import { eventsSecretBox } from './secret-box.ts';
import { markerHandlers } from './charts/markers.ts';
import { noteHandlers } from './charts/notes.ts';
import { notificationHandlers, startNotifications } from './notifications/index.ts';
import type { EventsDeps } from './deps.ts';
import { FleetDirectory } from './fleet-directory.ts';
import { startDeliveryConsumer } from './records/deliveries.ts';
import { receiverHandlers } from './receivers/manage.ts';
import { receiveHandlers } from './receivers/receive.ts';
import { ReceiverRegistry } from './receivers/registry.ts';
import { startTimelineIngest } from './timeline/ingest.ts';
import { timelineHandlers } from './timeline/read.ts';
import { voiceHandlers } from './voice/callbacks.ts';
import { startPager } from './voice/pager.ts';

/**
 * Events: receivers of external events (code hosts, a delivery tool, an alert router) and the deploys and alert groups
 * they record, paging by phone, the event timeline, notes on charts and chart markers, and notifications on the
 * channels people use. Knows the fleet only through
 * its lookup subjects and its events.
 */
export const eventsDomain: DomainModule = {
  name: 'events',
  async start(domain: DomainContext): Promise<DomainHandle> {
    const box = eventsSecretBox(domain.config);
    const orm = await domain.stores.orm();
    const log = domain.log;
    const receivers = new ReceiverRegistry(orm, box);
    receivers.listen(domain.nc, log);
    const deps: EventsDeps = {
      config: domain.config,
      log,
      orm,
      nc: domain.nc,
      clock: domain.clock,
      audit: new AuditRecorder(domain.nc, domain.clock),
      box,
      fleet: new FleetDirectory(domain.host.caller),
      receivers,
      caller: domain.host.caller,
    };
    const consumers: ConsumerHandle[] = [];
    try {
      await domain.host.serve('events', 'events-receivers', receiverHandlers(deps));
      await domain.host.serve('events', 'events-receive', receiveHandlers(deps));
      await domain.host.serve('events', 'events-voice', voiceHandlers(deps));
      await domain.host.serve('events', 'events-timeline', timelineHandlers(deps));
      await domain.host.serve('events', 'events-charts', { ...noteHandlers(deps), ...markerHandlers(deps) });
      await domain.host.serve('events', 'events-notifications', notificationHandlers(deps));
      consumers.push(await startDeliveryConsumer(deps));
      consumers.push(await startPager(deps));
      consumers.push(...(await startTimelineIngest(deps)));
      consumers.push(...(await startNotifications(deps)));
    } catch (err) {
      await Promise.all(consumers.map((c) => c.stop()));
      receivers.stop();
      throw err;
    }
    return {
      stop: async () => {
        await Promise.all(consumers.map((c) => c.stop()));
        receivers.stop();
      },
    };
  },
};
