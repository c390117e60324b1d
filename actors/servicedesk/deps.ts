import type { MikroORM } from '@mikro-orm/postgresql';
import { requirePermission } from '../../contracts/access.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { AuditRecorder } from '../../platform/audit.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { Handlers } from '../../platform/serve.ts';
import type { KvStore } from '../../platform/stores/kv.ts';
import type { ReadMemo } from './reads/memo.ts';
import type { SyncEngine } from './sync/engine.ts';
import type { TrackerApi } from './tracker/api.ts';
import type { SiteCatalog } from './tracker/site.ts';
import type { UploadStore } from './uploads/store.ts';

/** What the service desk's actors share. Built once per process by actors/servicedesk/index.ts. */
export interface SdDeps {
  orm: MikroORM;
  audit: AuditRecorder;
  kv: KvStore;
  config: Config;
  clock: Clock;
  log: Logger;
  /** Undefined when the tracker is not configured: every route then answers 503 naming the variables. */
  tracker: TrackerApi | undefined;
  sync: SyncEngine | undefined;
  /** The site's fields (where the Organizations and SLA values are) and statuses, kept a while; with the tracker. */
  site: SiteCatalog | undefined;
  uploads: UploadStore;
  /** Aggregates memoized per store generation; bumped after every change to the store. */
  memo: ReadMemo;
}

export type SdHandlers = Handlers<SystemCatalogue, 'servicedesk'>;

export const SD_VARIABLES = ['SVC_SD_BASE_URL', 'SVC_SD_EMAIL', 'SVC_SD_API_TOKEN'] as const;

/** The variables of the tracker connection that are not set (empty when configured). */
export function missingSettings(config: Config): string[] {
  return SD_VARIABLES.filter((k) => !config[k]);
}

export function notConfigured(config: Config): DomainError {
  return new DomainError(
    'unavailable',
    `the service desk is not configured: set ${SD_VARIABLES.join(', ')} (missing: ${missingSettings(config).join(', ')})`,
  );
}

/** The tracker's API, or 503 naming what is missing. */
export function trackerOf(deps: SdDeps): TrackerApi {
  if (!deps.tracker) throw notConfigured(deps.config);
  return deps.tracker;
}

/** The site's fields and statuses, or 503 naming what is missing. */
export function siteOf(deps: SdDeps): SiteCatalog {
  if (!deps.site) throw notConfigured(deps.config);
  return deps.site;
}

const READ = 'servicedesk:read';
const WRITE = 'servicedesk:write';

/**
 * The permission each subject's handler requires first (on some client). While the tracker is not configured a
 * caller holding it gets the 503; any other gets the handler's 403, so the deployment's configuration is told only
 * to callers allowed to use the route. Every subject of the domain must be named (a missing one fails to compile).
 */
export const ROUTE_PERMISSION: { readonly [S in keyof Required<SdHandlers>]: string } = {
  'svc.servicedesk.mappings.list': 'servicedeskconfig:read',
  'svc.servicedesk.mappings.create': 'servicedeskconfig:write',
  'svc.servicedesk.mappings.update': 'servicedeskconfig:write',
  'svc.servicedesk.mappings.delete': 'servicedeskconfig:delete',
  'svc.servicedesk.sync.run': 'servicedeskconfig:write',
  'svc.servicedesk.organizations.list': READ,
  'svc.servicedesk.tickets.list': READ,
  'svc.servicedesk.tickets.get': READ,
  'svc.servicedesk.kanban': READ,
  'svc.servicedesk.metrics.sla': READ,
  'svc.servicedesk.metrics.delivery': READ,
  'svc.servicedesk.metrics.summary': READ,
  'svc.servicedesk.export': READ,
  'svc.servicedesk.actions.list': READ,
  'svc.servicedesk.comments.list': READ,
  'svc.servicedesk.transitions.list': READ,
  'svc.servicedesk.approvals.list': READ,
  'svc.servicedesk.attachments.list': READ,
  'svc.servicedesk.request_types.fields': READ,
  'svc.servicedesk.comments.create': WRITE,
  'svc.servicedesk.transitions.execute': WRITE,
  'svc.servicedesk.approvals.decide': WRITE,
  'svc.servicedesk.attachments.prepare': WRITE,
  'svc.servicedesk.attachments.add': WRITE,
  'svc.servicedesk.requests.create': WRITE,
};

/**
 * While the tracker is not configured every handler of the domain answers 503 naming the variables, but only to a
 * caller holding the route's permission somewhere: authorization comes before availability (403, not 503).
 */
export function whenConfigured(deps: SdDeps, handlers: SdHandlers): SdHandlers {
  if (deps.tracker) return handlers;
  const refuse =
    (subject: keyof typeof ROUTE_PERMISSION) =>
    async (_input: unknown, { ctx }: { ctx: CallerContext }): Promise<never> => {
      requirePermission(ctx, ROUTE_PERMISSION[subject]);
      throw notConfigured(deps.config);
    };
  return Object.fromEntries(
    (Object.keys(handlers) as (keyof typeof ROUTE_PERMISSION)[]).map((k) => [k, refuse(k)]),
  ) as SdHandlers;
}
