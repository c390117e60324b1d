import { z } from 'zod';
import type { SlaCycle } from '../../../contracts/domains/servicedesk.ts';
import { dtoDate, organizationIdsOf, SlaDto, trackerDate, type History, type Issue } from '../tracker/api.ts';
import { asCategory, isSlaNamed, SLA_NAMES, type Category, type SiteFields } from '../tracker/site.ts';
import { cycleFacts, slaFacts, type SlaFacts } from './sla-events.ts';

export { asCategory, type Category, type SiteFields };

/** The tracker's priority names, most urgent first; unknown names sort below them. */
const PRIORITY_RANK: Record<string, number> = {
  highest: 5,
  blocker: 5,
  critical: 5,
  high: 4,
  major: 4,
  medium: 3,
  low: 2,
  minor: 2,
  lowest: 1,
  trivial: 1,
};

export interface StatusChangeRow {
  seq: number;
  from_status: string | null;
  to_status: string;
  changed_at: string;
}

/**
 * The columns of sd_requests a ticket shows: the one list of them, shared by the sync's record below and the reads'
 * ticket row (reads/query.ts).
 */
export interface RequestColumns {
  issue_key: string;
  project_key: string;
  service_desk_id: string | null;
  request_type_id: string | null;
  request_type: string | null;
  summary: string;
  status: string;
  status_category: Category;
  priority: string | null;
  issue_type: string | null;
  assignee: string | null;
  assignee_email: string | null;
  reporter_name: string | null;
  reporter_email: string | null;
  organization_ids: string[];
  labels: string[];
  linked_issue_key: string | null;
  created_at: string;
  updated_at: string;
  resolved_at: string | null;
  due_date: string | null;
}

/** One request as the store keeps it (sd_requests), with its status history. */
export interface RequestRecord extends RequestColumns {
  issue_id: string;
  issue_number: number;
  priority_rank: number;
  started_at: string | null;
  acknowledged_at: string | null;
  first_response_ms: number | null;
  first_response_breached: boolean | null;
  resolution_ms: number | null;
  resolution_breached: boolean | null;
  resolution_sla_status: string;
  sla: SlaCycle[];
  /** Each metric's cycle state and breach time, what the next sync compares with (sla-events.ts). */
  sla_facts: SlaFacts;
  history: StatusChangeRow[];
}

const RequestTypeValue = z.object({
  requestType: z.object({
    id: z.union([z.string(), z.number()]).transform(String),
    name: z.string().optional(),
    serviceDeskId: z.union([z.string(), z.number()]).transform(String).optional(),
  }),
});

/** Status changes in time order, from the changelog's histories. */
export function statusChanges(histories: readonly History[]): (StatusChangeRow & { to_id: string | null })[] {
  const sorted = [...histories].sort(
    (a, b) =>
      (trackerDate(a.created)?.getTime() ?? 0) - (trackerDate(b.created)?.getTime() ?? 0) ||
      Number(a.id) - Number(b.id),
  );
  const out: (StatusChangeRow & { to_id: string | null })[] = [];
  for (const h of sorted) {
    const at = trackerDate(h.created);
    if (!at) continue;
    for (const item of h.items) {
      if (item.field !== 'status' && item.fieldId !== 'status') continue;
      out.push({
        seq: out.length + 1,
        from_status: item.fromString ?? null,
        to_status: item.toString ?? '',
        changed_at: at.toISOString(),
        to_id: item.to ?? null,
      });
    }
  }
  return out;
}

function cycles(dto: SlaDto | undefined): SlaCycle[] {
  if (!dto) return [];
  const one = (c: NonNullable<SlaDto['ongoingCycle']>, state: 'completed' | 'ongoing'): SlaCycle => ({
    name: dto.name,
    state,
    start: dtoDate(c.startTime)?.toISOString() ?? null,
    stop: dtoDate(c.stopTime)?.toISOString() ?? null,
    breached: c.breached,
    paused: c.paused ?? false,
    goal_ms: c.goalDuration ? Math.round(c.goalDuration.millis) : null,
    elapsed_ms: c.elapsedTime ? Math.round(c.elapsedTime.millis) : null,
  });
  return [
    ...dto.completedCycles.map((c) => one(c, 'completed')),
    ...(dto.ongoingCycle ? [one(dto.ongoingCycle, 'ongoing')] : []),
  ];
}

/** An SLA value from a search field, or undefined when absent or unreadable. */
export function slaFromField(value: unknown): SlaDto | undefined {
  if (value === null || value === undefined) return undefined;
  const r = SlaDto.safeParse(value);
  return r.success ? r.data : undefined;
}

/** Picks the two SLAs the metrics use out of a request's SLA list (the `/sla` endpoint's answer), by their whole default names. */
export function pickSlas(list: readonly SlaDto[]): {
  firstResponse: SlaDto | undefined;
  resolution: SlaDto | undefined;
} {
  return {
    firstResponse: list.find((s) => isSlaNamed(s.name, SLA_NAMES.firstResponse)),
    resolution: list.find((s) => isSlaNamed(s.name, SLA_NAMES.resolution)),
  };
}

/**
 * Turns a search hit into the store's record. Derived once here, so reads are plain aggregates:
 * - acknowledged_at: the first status change; started_at: the first move into a status outside To Do;
 * - first response: the first completed cycle of the first-response SLA (elapsed ms, breached);
 * - resolution: `met`/`breached` from the last completed cycle, `in_progress`/`paused`/`breached` while ongoing,
 *   `none` without the SLA;
 * - sla_facts: each SLA's state and the running cycle's breach time, what the next sync compares with (sla-events.ts).
 */
export function toRecord(
  issue: Issue,
  histories: readonly History[],
  site: SiteFields,
  slas: { firstResponse: SlaDto | undefined; resolution: SlaDto | undefined },
): RequestRecord {
  const f = issue.fields;
  const projectKey = f.project?.key ?? issue.key.split('-')[0] ?? '';
  const created = trackerDate(f.created) ?? new Date(0);
  const updated = trackerDate(f.updated) ?? created;
  const changes = statusChanges(histories);
  const categoryOf = (id: string | null, name: string): Category =>
    (id && site.categoryById.get(id)) || site.categoryByName.get(name.toLowerCase()) || 'new';
  const started = changes.find((c) => categoryOf(c.to_id, c.to_status) !== 'new');
  const rt = site.requestType ? RequestTypeValue.safeParse(f[site.requestType]) : undefined;
  const requestType = rt?.success ? rt.data.requestType : undefined;

  const frt = cycles(slas.firstResponse);
  const ttr = cycles(slas.resolution);
  const firstResponse = frt.find((c) => c.state === 'completed');
  const frtOngoing = frt.find((c) => c.state === 'ongoing');
  const ttrCompleted = ttr.filter((c) => c.state === 'completed');
  const ttrLast = ttrCompleted[ttrCompleted.length - 1];
  const ttrOngoing = ttr.find((c) => c.state === 'ongoing');
  let resolutionStatus = 'none';
  if (ttrOngoing) resolutionStatus = ttrOngoing.breached ? 'breached' : ttrOngoing.paused ? 'paused' : 'in_progress';
  else if (ttrLast) resolutionStatus = ttrLast.breached ? 'breached' : 'met';

  // The linked engineering issue: the first link to an issue of another project.
  let linked: string | null = null;
  for (const l of f.issuelinks ?? []) {
    const other = l.outwardIssue?.key ?? l.inwardIssue?.key;
    if (other && other.split('-')[0] !== projectKey) {
      linked = other;
      break;
    }
  }
  const status = f.status?.name ?? 'Unknown';
  const due = f.duedate && /^\d{4}-\d\d-\d\d/.test(f.duedate) ? f.duedate.slice(0, 10) : null;
  return {
    issue_key: issue.key,
    issue_id: issue.id,
    project_key: projectKey,
    issue_number: Number(issue.key.split('-')[1] ?? 0) || 0,
    service_desk_id: requestType?.serviceDeskId ?? null,
    request_type_id: requestType?.id ?? null,
    request_type: requestType?.name ?? null,
    summary: f.summary ?? '',
    status,
    status_category: f.status?.statusCategory
      ? asCategory(f.status.statusCategory.key)
      : categoryOf(f.status?.id ?? null, status),
    priority: f.priority?.name ?? null,
    priority_rank: f.priority ? (PRIORITY_RANK[f.priority.name.toLowerCase()] ?? 0) : 0,
    issue_type: f.issuetype?.name ?? null,
    assignee: f.assignee?.displayName ?? null,
    assignee_email: f.assignee?.emailAddress?.toLowerCase() ?? null,
    reporter_name: f.reporter?.displayName ?? null,
    reporter_email: f.reporter?.emailAddress?.toLowerCase() ?? null,
    organization_ids: organizationIdsOf(f, site.organizations),
    labels: f.labels ?? [],
    linked_issue_key: linked,
    created_at: created.toISOString(),
    updated_at: updated.toISOString(),
    resolved_at: trackerDate(f.resolutiondate)?.toISOString() ?? null,
    due_date: due,
    started_at: started?.changed_at ?? null,
    acknowledged_at: changes[0]?.changed_at ?? null,
    first_response_ms: firstResponse?.elapsed_ms ?? null,
    first_response_breached: firstResponse ? firstResponse.breached : frtOngoing ? frtOngoing.breached : null,
    resolution_ms: ttrLast && !ttrOngoing ? ttrLast.elapsed_ms : null,
    resolution_breached: ttr.length > 0 ? ttr.some((c) => c.breached) : null,
    resolution_sla_status: resolutionStatus,
    sla: [...frt, ...ttr],
    sla_facts: slaFacts({
      first_response: cycleFacts(frt, dtoDate(slas.firstResponse?.ongoingCycle?.breachTime)),
      resolution: cycleFacts(ttr, dtoDate(slas.resolution?.ongoingCycle?.breachTime)),
    }),
    history: changes.map(({ to_id: _unused, ...c }) => c),
  };
}
