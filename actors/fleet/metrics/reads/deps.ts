import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../../contracts/catalogue.ts';
import type { Clock } from '../../../../platform/clock.ts';
import type { Handlers } from '../../../../platform/serve.ts';
import type { HostScope, HostScopes } from '../host-scopes.ts';
import type { LabelNamesCache } from '../label-names.ts';
import type { loadHost } from '../../scope.ts';
import type { Tsdb } from '../tsdb.ts';

export interface MetricsReadDeps {
  orm: MikroORM;
  tsdb: Tsdb;
  clock: Clock;
  /** Shared by the handlers of one actor; tests may pass their own. */
  labelNames?: LabelNamesCache;
  /** Shared with the host handlers, which forget the hosts they delete. */
  hostScopes?: HostScopes;
}

/** What the metric read handlers of one actor share. */
export interface MetricsReads {
  deps: MetricsReadDeps;
  fork(): EntityManager;
  labelNames: LabelNamesCache;
  /** The host, 404 out of the caller's reach and 403 without metrics:read, its row read only when not kept. */
  host(ctx: Parameters<typeof loadHost>[1], id: string): Promise<HostScope>;
}

/** The handler table type of the metric reads; each file of this folder fills in its own subjects. */
export type MetricsReadHandlers = Handlers<SystemCatalogue, 'fleet'>;

export const PERMISSION = 'metrics:read';
