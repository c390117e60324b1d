import type { DomainContext, DomainHandle, DomainModule } from '../../platform/domain.ts';
import { AuditRecorder } from '../../platform/audit.ts';
import type { ConsumerHandle } from '../../platform/jetstream.ts';
import { eventsSecretBox } from './secret-box.ts';
import { markerHandlers } from './charts/markers.ts';
import { noteHandlers } from './charts/notes.ts';
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
 * they record, paging by phone, the event timeline, notes on charts and chart markers. Knows the fleet only through
 * its lookup subjects and its events.
 */
export const eventsDomain: DomainModule = {
  name: 'events',
  async start(dc: DomainContext): Promise<DomainHandle> {
    const box = eventsSecretBox(dc.config);
    const orm = await dc.stores.orm();
    const log = dc.log;
    const receivers = new ReceiverRegistry(orm, box);
    receivers.listen(dc.nc, log);
    const deps: EventsDeps = {
      config: dc.config,
      log,
      orm,
      nc: dc.nc,
      clock: dc.clock,
      audit: new AuditRecorder(dc.nc, dc.clock),
      box,
      fleet: new FleetDirectory(dc.host.caller),
      receivers,
      caller: dc.host.caller,
    };
    const consumers: ConsumerHandle[] = [];
    try {
      await dc.host.serve('events', 'events-receivers', receiverHandlers(deps));
      await dc.host.serve('events', 'events-receive', receiveHandlers(deps));
      await dc.host.serve('events', 'events-voice', voiceHandlers(deps));
      await dc.host.serve('events', 'events-timeline', timelineHandlers(deps));
      await dc.host.serve('events', 'events-charts', { ...noteHandlers(deps), ...markerHandlers(deps) });
      consumers.push(await startDeliveryConsumer(deps));
      consumers.push(await startPager(deps));
      consumers.push(...(await startTimelineIngest(deps)));
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
