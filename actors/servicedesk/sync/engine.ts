import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { SlaChanged } from '../../../contracts/domains/servicedesk.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { publishEvent } from '../../../platform/jetstream.ts';
import { Lease } from '../../../platform/lease.ts';
import type { Logger } from '../../../platform/logger.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { History, Issue, TrackerApi } from '../tracker/api.ts';
import { jqlField, SiteCatalog, type Site } from '../tracker/site.ts';
import { pickSlas, slaFromField, toRecord, type RequestRecord } from './normalize.ts';
import { slaMsgId } from './sla-events.ts';
import { upsertRequests } from './store.ts';

export interface SyncSettings {
  intervalSeconds: number;
  overlapSeconds: number;
  /** Called after a committed change to the store (readers' memoized aggregates go stale). */
  changed?: () => Promise<void>;
  /** Issues per search page (default 100, the tracker's maximum). */
  pageSize?: number;
  /** The site's fields and statuses, shared with the proxy (default: its own, with no overrides, kept an hour). */
  site?: SiteCatalog;
}

export interface SyncReport {
  organizations: { organization_id: string; requests: number; full_load: boolean; error: string | null }[];
}

const PAGE_SIZE = 100;
const LEASE_MS = 60_000;
/** Pending writes the sync never confirmed (the request was deleted, moved out of the organization) are dropped after this. */
const PENDING_MAX_AGE = '1 day';
const BASE_FIELDS = [
  'summary',
  'status',
  'priority',
  'issuetype',
  'assignee',
  'reporter',
  'created',
  'updated',
  'resolutiondate',
  'duedate',
  'labels',
  'project',
  'issuelinks',
];
const SITE_CACHE_MS = 3_600_000;

interface StateRow {
  organization_id: string;
  watermark: string | null;
  full_load_completed_at: string | null;
}

/**
 * Keeps the read store in step with the tracker, one organization at a time: the first run loads everything of the
 * organization (JQL on its Organizations field), later runs only what was updated since the stored watermark minus
 * an overlap (JQL dates have minute precision, in the account's time zone). Pages are ordered by `updated`, and each
 * page commits with the watermark it reached, so a run that dies resumes where the last page ended. One instance
 * runs it at a time (a lease in JetStream KV); a run asked for while another is going waits for it, then runs. A copy
 * that changes a request's SLA cycle announces it (svc.evt.servicedesk.sla, sla-events.ts) with its page.
 */
export class SyncEngine {
  private readonly lease: Lease;
  private readonly site: SiteCatalog;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<SyncReport> | undefined;
  private stopped = false;
  private readonly abort = new AbortController();

  private readonly orm: MikroORM;
  private readonly api: TrackerApi;
  private readonly nc: NatsConnection;
  private readonly log: Logger;
  private readonly settings: SyncSettings;
  constructor(orm: MikroORM, api: TrackerApi, nc: NatsConnection, log: Logger, settings: SyncSettings) {
    this.orm = orm;
    this.api = api;
    this.nc = nc;
    this.log = log;
    this.settings = settings;
    this.lease = new Lease(nc, 'servicedesk-sync', LEASE_MS, log);
    this.site = settings.site ?? new SiteCatalog(api, {}, SITE_CACHE_MS, log);
  }

  start(): void {
    if (this.settings.intervalSeconds <= 0) return;
    const tick = (): void => {
      void this.runIfLeader()
        .catch((err: unknown) => this.log.warn({ err }, 'service desk sync failed; the next run retries'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.settings.intervalSeconds * 1000);
        });
    };
    this.timer = setTimeout(tick, 1_000);
  }

  /** Starts a run in the background unless one is going (a new mapping is loaded at once). */
  kick(): void {
    if (this.current || this.stopped) return;
    void this.runIfLeader().catch((err: unknown) => this.log.warn({ err }, 'service desk sync failed'));
  }

  /** Runs now and waits for it; 409 when another instance holds the sync. */
  async run(): Promise<SyncReport> {
    for (;;) {
      while (this.current) await this.current.catch(() => undefined);
      if (this.stopped) throw new DomainError('unavailable', 'the service desk is shutting down');
      if (!(await this.lease.hold()))
        throw new DomainError('conflict', 'a service desk sync is running on another instance; try again shortly');
      // A timer's run may have started while the lease was checked: wait for that one too.
      if (!this.current) return this.track(this.runAll());
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort.abort(new DomainError('unavailable', 'shutting down'));
    await this.current?.catch(() => undefined);
    await this.lease.release();
  }

  private async runIfLeader(): Promise<SyncReport | undefined> {
    if (this.current || this.stopped) return undefined;
    if (!(await this.lease.hold()) || this.current) return undefined;
    return this.track(this.runAll());
  }

  private track(p: Promise<SyncReport>): Promise<SyncReport> {
    this.current = p;
    void p
      .catch(() => undefined)
      .finally(() => {
        if (this.current === p) this.current = undefined;
      });
    return p;
  }

  private async runAll(): Promise<SyncReport> {
    const em = this.orm.em.fork();
    const orgs = await sql<{ organization_id: string }>(
      em,
      `SELECT DISTINCT organization_id FROM sd_mappings ORDER BY organization_id`,
    );
    const expired = await sql<{ id: string }>(
      em,
      `DELETE FROM sd_pending WHERE created_at < now() - interval '${PENDING_MAX_AGE}' RETURNING id`,
    );
    if (expired.length > 0) await this.settings.changed?.();
    const report: SyncReport = { organizations: [] };
    if (orgs.length === 0) return report;
    const opts = { on429: 'wait' as const, signal: this.abort.signal };
    const site = await this.site.get(opts);
    for (const { organization_id } of orgs) {
      if (this.stopped) break;
      try {
        const r = await this.syncOrganization(organization_id, site);
        report.organizations.push({ organization_id, ...r, error: null });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.log.warn({ err, organization_id }, 'service desk sync of an organization failed');
        await sql(this.orm.em.fork(), `UPDATE sd_sync_state SET last_error = ? WHERE organization_id = ?`, [
          message.slice(0, 500),
          organization_id,
        ]);
        report.organizations.push({ organization_id, requests: 0, full_load: false, error: message });
      }
    }
    return report;
  }

  private async syncOrganization(
    organizationId: string,
    site: Site,
  ): Promise<{ requests: number; full_load: boolean }> {
    const em = this.orm.em.fork();
    await sql(em, `INSERT INTO sd_sync_state (organization_id) VALUES (?) ON CONFLICT (organization_id) DO NOTHING`, [
      organizationId,
    ]);
    const [state] = await sql<StateRow>(
      em,
      `SELECT organization_id, watermark, full_load_completed_at FROM sd_sync_state WHERE organization_id = ?`,
      [organizationId],
    );
    await sql(em, `UPDATE sd_sync_state SET last_run_at = now() WHERE organization_id = ?`, [organizationId]);
    const fullLoad = !state?.full_load_completed_at;
    const since = state?.watermark
      ? new Date(new Date(state.watermark).getTime() - this.settings.overlapSeconds * 1000)
      : undefined;
    const jql = `${jqlField(site.organizations)} = ${organizationId}${since ? ` AND updated >= "${jqlDate(since, site.timeZone)}"` : ''} ORDER BY updated ASC, key ASC`;
    const fields = [
      ...BASE_FIELDS,
      site.organizations,
      ...[site.firstResponseSla, site.resolutionSla, site.requestType].filter((f): f is string => f !== undefined),
    ];
    const opts = { on429: 'wait' as const, signal: this.abort.signal };
    let token: string | undefined;
    let count = 0;
    for (;;) {
      if (this.stopped) throw new DomainError('unavailable', 'shutting down');
      const page = await this.api.search(jql, fields, token, this.settings.pageSize ?? PAGE_SIZE, opts);
      const records: RequestRecord[] = [];
      for (const issue of page.issues) records.push(await this.record(issue, site));
      const watermark = records.reduce<string | null>(
        (max, r) => (max === null || r.updated_at > max ? r.updated_at : max),
        null,
      );
      await this.orm.em.fork().transactional(async (tx) => {
        // Published before the page commits: a failed publish rolls the page back, and the retried sync publishes the
        // same message ids again (the stream keeps one of each).
        await this.publishSla(await upsertRequests(tx, records));
        await sql(
          tx,
          `UPDATE sd_sync_state SET watermark = GREATEST(COALESCE(watermark, ?::timestamptz), ?::timestamptz), requests_synced = requests_synced + ? WHERE organization_id = ?`,
          [watermark ?? '1970-01-01T00:00:00Z', watermark ?? '1970-01-01T00:00:00Z', records.length, organizationId],
        );
      });
      count += records.length;
      if (records.length > 0) await this.settings.changed?.();
      if (page.isLast === true || !page.nextPageToken || page.issues.length === 0) break;
      token = page.nextPageToken;
      // Long loads keep the lease; losing it means another instance took over: stop here, it resumes from the watermark.
      if (!(await this.lease.hold())) throw new DomainError('conflict', 'the sync lease was lost to another instance');
    }
    await sql(
      this.orm.em.fork(),
      `UPDATE sd_sync_state SET full_load_completed_at = COALESCE(full_load_completed_at, now()), last_success_at = now(), last_error = NULL WHERE organization_id = ?`,
      [organizationId],
    );
    if (count > 0)
      this.log.info(
        { organization_id: organizationId, requests: count, full_load: fullLoad },
        'service desk requests synced',
      );
    return { requests: count, full_load: fullLoad };
  }

  private async publishSla(events: readonly SlaChanged[]): Promise<void> {
    // A request the event cannot describe (a key outside the contract's form) is skipped, not retried: refused by the
    // publish, it would roll its page back on every run and stop the organization's sync.
    const valid = events.filter((e) => {
      const ok = SlaChanged.safeParse(e).success;
      if (!ok)
        this.log.warn({ issue_key: e.issue_key }, 'SLA change not announced: the request does not fit the event');
      return ok;
    });
    await Promise.all(valid.map((e) => publishEvent(this.nc, 'svc.evt.servicedesk.sla', e, { msgId: slaMsgId(e) })));
  }

  /** A search hit as a record; its changelog completed and its SLAs fetched when the search did not carry them. */
  private async record(issue: Issue, site: Site): Promise<RequestRecord> {
    const opts = { on429: 'wait' as const, signal: this.abort.signal };
    let histories: History[] = issue.changelog?.histories ?? [];
    const total = issue.changelog?.total ?? histories.length;
    if (total > histories.length) {
      histories = [];
      for (let startAt = 0; ;) {
        const page = await this.api.changelog(issue.key, startAt, opts);
        histories.push(...page.values);
        startAt += page.values.length;
        if (page.isLast === true || page.values.length === 0 || startAt >= page.total) break;
      }
    }
    let slas = {
      firstResponse: site.firstResponseSla ? slaFromField(issue.fields[site.firstResponseSla]) : undefined,
      resolution: site.resolutionSla ? slaFromField(issue.fields[site.resolutionSla]) : undefined,
    };
    // A site whose SLA fields cannot be found: the request's own SLA list.
    if (!site.firstResponseSla && !site.resolutionSla) slas = pickSlas(await this.api.sla(issue.key, opts));
    return toRecord(issue, histories, site, slas);
  }
}

/** JQL's date literal (`yyyy/MM/dd HH:mm`), in the time zone the tracker reads it in (the account's). */
export function jqlDate(at: Date, timeZone: string): string {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).formatToParts(at);
  } catch {
    parts = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'UTC',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).formatToParts(at);
  }
  const get = (t: string): string => parts.find((p) => p.type === t)?.value ?? '00';
  return `${get('year')}/${get('month')}/${get('day')} ${get('hour')}:${get('minute')}`;
}
