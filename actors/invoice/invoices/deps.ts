import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../../../platform/clock.ts';
import type { AnalyticsReader } from '../analytics/reader.ts';

/** What the invoice handlers work with. */
export interface InvoiceDeps {
  orm: MikroORM;
  reader: AnalyticsReader;
  clock: Clock;
}
