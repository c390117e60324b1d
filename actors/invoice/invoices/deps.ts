import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Clock } from '../../../platform/clock.ts';
import type { AnalyticsReader } from '../analytics/reader.ts';

/** What the invoice handlers work with. */
export interface InvoiceDeps {
  orm: MikroORM;
  reader: AnalyticsReader;
  clock: Clock;
  /** Where review moves are announced (svc.evt.invoice.review). */
  nc: NatsConnection;
}
