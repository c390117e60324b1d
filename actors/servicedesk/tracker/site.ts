import type { Logger } from '../../../platform/logger.ts';
import type { CallOpts, TrackerApi, TrackerField } from './api.ts';

/** A status category key, as the tracker files statuses. */
export type Category = 'new' | 'indeterminate' | 'done';
export const asCategory = (key: string | undefined): Category =>
  key === 'indeterminate' || key === 'done' ? key : 'new';

export const SLA_FIELD_TYPE = 'com.atlassian.servicedesk:sd-sla-field';
export const ORGANIZATIONS_FIELD_TYPE = 'com.atlassian.servicedesk:sd-customer-organizations';
const REQUEST_TYPE_FIELD_TYPE = 'com.atlassian.servicedesk:vp-origin';
/** The Organizations field's id the spec names: kept when the site lists no field of that type. */
export const DEFAULT_ORGANIZATIONS_FIELD = 'customfield_10002';

/**
 * Jira Service Management's default SLA names, matched whole: a site's other SLAs share their words ("Time to close
 * after resolution"), and /rest/api/3/field promises no order.
 */
export const SLA_NAMES = { resolution: 'Time to resolution', firstResponse: 'Time to first response' } as const;
export const isSlaNamed = (name: string, wanted: string): boolean => name.trim().toLowerCase() === wanted.toLowerCase();

/** Field ids an operator names outright (SVC_SD_SLA_RESOLUTION_FIELD, SVC_SD_SLA_FIRST_RESPONSE_FIELD, SVC_SD_ORGANIZATIONS_FIELD). */
export interface FieldOverrides {
  resolutionSla?: string | undefined;
  firstResponseSla?: string | undefined;
  organizations?: string | undefined;
}

type Source = 'setting' | 'found' | 'default' | 'none';

export interface FieldChoice {
  firstResponseSla: string | undefined;
  resolutionSla: string | undefined;
  requestType: string | undefined;
  organizations: string;
  /** Where each came from, for the log. */
  sources: { first_response_sla: Source; resolution_sla: Source; organizations: Source };
  /** What an operator should look at (a named field the site does not list as expected, no SLA field at all). */
  warnings: string[];
}

/** Picks the fields the service desk reads out of the site's field list, an operator's setting first. */
export function chooseFields(fields: readonly TrackerField[], overrides: FieldOverrides): FieldChoice {
  const warnings: string[] = [];
  const ofType = (type: string): TrackerField[] => fields.filter((f) => f.schema?.custom === type);
  const named = (setting: string, id: string, type: string, what: string): string => {
    const listed = fields.find((f) => f.id === id);
    if (!listed) warnings.push(`${setting}=${id}: the site lists no such field; ${what} reads it all the same`);
    else if (listed.schema?.custom !== type)
      warnings.push(
        `${setting}=${id}: the site lists "${listed.name}" of type ${listed.schema?.custom ?? 'none'}, not ${type}`,
      );
    return id;
  };
  const sla = (setting: string, override: string | undefined, name: string): [string | undefined, Source] => {
    if (override) return [named(setting, override, SLA_FIELD_TYPE, 'the sync'), 'setting'];
    const id = ofType(SLA_FIELD_TYPE).find((f) => isSlaNamed(f.name, name))?.id;
    return [id, id ? 'found' : 'none'];
  };
  const [resolutionSla, resolutionSource] = sla(
    'SVC_SD_SLA_RESOLUTION_FIELD',
    overrides.resolutionSla,
    SLA_NAMES.resolution,
  );
  const [firstResponseSla, firstResponseSource] = sla(
    'SVC_SD_SLA_FIRST_RESPONSE_FIELD',
    overrides.firstResponseSla,
    SLA_NAMES.firstResponse,
  );
  if (!resolutionSla && !firstResponseSla) {
    warnings.push(
      `no SLA field named "${SLA_NAMES.resolution}" or "${SLA_NAMES.firstResponse}": each request's SLAs are read from its own /sla (set SVC_SD_SLA_RESOLUTION_FIELD and SVC_SD_SLA_FIRST_RESPONSE_FIELD to name them)`,
    );
  }
  let organizations: string;
  let organizationsSource: Source;
  if (overrides.organizations) {
    organizations = named(
      'SVC_SD_ORGANIZATIONS_FIELD',
      overrides.organizations,
      ORGANIZATIONS_FIELD_TYPE,
      'the service',
    );
    organizationsSource = 'setting';
  } else {
    const found = ofType(ORGANIZATIONS_FIELD_TYPE).filter((f) => /^customfield_\d+$/.test(f.id));
    // Two of the type would be odd; the spec's own id wins then.
    organizations =
      (found.find((f) => f.id === DEFAULT_ORGANIZATIONS_FIELD) ?? found[0])?.id ?? DEFAULT_ORGANIZATIONS_FIELD;
    organizationsSource = found.length > 0 ? 'found' : 'default';
  }
  return {
    firstResponseSla,
    resolutionSla,
    requestType: ofType(REQUEST_TYPE_FIELD_TYPE)[0]?.id,
    organizations,
    sources: {
      first_response_sla: firstResponseSource,
      resolution_sla: resolutionSource,
      organizations: organizationsSource,
    },
    warnings,
  };
}

/** What the sync learns about the site once per run: where the SLA and request-type fields are, status categories. */
export interface SiteFields {
  firstResponseSla: string | undefined;
  resolutionSla: string | undefined;
  requestType: string | undefined;
  /** The Organizations field's id (customfield_10002 unless the site keeps it elsewhere). */
  organizations: string;
  /** status id → category key, and the same by name (history items carry both). */
  categoryById: Map<string, Category>;
  categoryByName: Map<string, Category>;
}

/** What the service desk knows of the site: its fields, the category of every status, the account's time zone. */
export interface Site extends SiteFields {
  timeZone: string;
}

/**
 * The site's fields, statuses and the account's time zone, read once and kept for `ttlMs` (they change rarely; a
 * short sync interval read all three on every run). Concurrent askers share one load; a failed load is not kept.
 * The choice of fields is logged at the first load and whenever a later one changes it.
 */
export class SiteCatalog {
  private cached: { site: Site; until: number } | undefined;
  private loading: Promise<Site> | undefined;
  private reported: string | undefined;

  private readonly api: TrackerApi;
  private readonly overrides: FieldOverrides;
  private readonly ttlMs: number;
  private readonly log: Logger;
  private readonly now: () => number;
  constructor(api: TrackerApi, overrides: FieldOverrides, ttlMs: number, log: Logger, now: () => number = Date.now) {
    this.api = api;
    this.overrides = overrides;
    this.ttlMs = ttlMs;
    this.log = log;
    this.now = now;
  }

  async get(opts: CallOpts = {}): Promise<Site> {
    if (this.cached && this.now() < this.cached.until) return this.cached.site;
    this.loading ??= this.load(opts).finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(opts: CallOpts): Promise<Site> {
    const [fields, statuses, myself] = await Promise.all([
      this.api.fields(opts),
      this.api.statuses(opts),
      this.api.myself(opts),
    ]);
    const choice = chooseFields(fields, this.overrides);
    const site: Site = {
      firstResponseSla: choice.firstResponseSla,
      resolutionSla: choice.resolutionSla,
      requestType: choice.requestType,
      organizations: choice.organizations,
      categoryById: new Map(statuses.map((s) => [s.id, asCategory(s.statusCategory.key)])),
      categoryByName: new Map(statuses.map((s) => [s.name.toLowerCase(), asCategory(s.statusCategory.key)])),
      timeZone: myself.timeZone ?? 'UTC',
    };
    this.cached = { site, until: this.now() + this.ttlMs };
    this.report(choice);
    return site;
  }

  private report(choice: FieldChoice): void {
    const chosen = {
      resolution_sla_field: choice.resolutionSla ?? null,
      first_response_sla_field: choice.firstResponseSla ?? null,
      organizations_field: choice.organizations,
      request_type_field: choice.requestType ?? null,
    };
    const key = JSON.stringify(chosen);
    if (key === this.reported) return;
    this.reported = key;
    this.log.info({ ...chosen, sources: choice.sources }, 'service desk fields chosen');
    for (const w of choice.warnings) this.log.warn({ fields: chosen }, `service desk fields: ${w}`);
  }
}

/** JQL names a custom field by its number: `customfield_10002` → `cf[10002]`. */
export function jqlField(id: string): string {
  const n = /^customfield_(\d+)$/.exec(id)?.[1];
  return n ? `cf[${n}]` : id;
}
