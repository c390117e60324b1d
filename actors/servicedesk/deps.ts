import type { MikroORM } from '@mikro-orm/postgresql';
import type { Cat } from '../../contracts/catalogue.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { AuditRecorder } from '../runtime/audit.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Config } from '../runtime/config.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Handlers } from '../runtime/serve.ts';
import type { KvStore } from '../runtime/stores/kv.ts';
import type { ReadMemo } from './reads/memo.ts';
import type { SyncEngine } from './sync/engine.ts';
import type { TrackerApi } from './tracker/api.ts';
import type { SiteCatalog } from './tracker/site.ts';
import type { UploadStore } from '../runtime/stores/uploads.ts';

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

export type SdHandlers = Handlers<Cat, 'servicedesk'>;

export const SD_VARIABLES = ['SVC_SD_BASE_URL', 'SVC_SD_EMAIL', 'SVC_SD_API_TOKEN'] as const;

/** The variables of the tracker connection that are not set (empty when configured). */
export function missingSettings(config: Config): string[] {
  return SD_VARIABLES.filter((k) => !config[k]);
}

export function notConfigured(config: Config): DomainError {
  return new DomainError('unavailable', `the service desk is not configured: set ${SD_VARIABLES.join(', ')} (missing: ${missingSettings(config).join(', ')})`);
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

/** Every handler of the domain answers 503 naming the variables while the tracker is not configured. */
export function whenConfigured(deps: SdDeps, handlers: SdHandlers): SdHandlers {
  if (deps.tracker) return handlers;
  const refuse = async (): Promise<never> => {
    throw notConfigured(deps.config);
  };
  return Object.fromEntries(Object.keys(handlers).map((k) => [k, refuse])) as SdHandlers;
}
