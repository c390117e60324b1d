import type { SlaChanged, SlaCycle } from '../../../contracts/domains/servicedesk.ts';
import { covers, type MappingRow } from '../scope.ts';

/**
 * What the sync tells of a request's SLAs (`svc.evt.servicedesk.sla`): for each of the two metrics, the state of its
 * cycle and when a running one breaches, compared with what the store held before the copy replaced it. Pure: the
 * store reads the previous row and the mappings, this decides what changed and who is told.
 */

export const SLA_METRICS = ['first_response', 'resolution'] as const;
export type SlaMetric = (typeof SLA_METRICS)[number];
export type SlaState = SlaChanged['state'];

/** One metric's cycle as the sync last saw it. `name`: the SLA's name, to find its cycles in an older row's `sla`. */
export interface CycleFacts {
  name: string;
  state: SlaState;
  breach_at: string | null;
}

/** sd_requests.sla_facts: the facts of each metric the request has an SLA for. */
export type SlaFacts = Partial<Record<SlaMetric, CycleFacts>>;

/** The stored copy's SLA columns; `sla_facts` is null on a row written before the sync kept them. */
export interface StoredSla {
  sla: readonly SlaCycle[];
  sla_facts: SlaFacts | null;
}

/**
 * The state of one SLA's cycles: the running cycle's (paused, breached or ongoing) when there is one, else the last
 * completed one's (breached or met); undefined without any cycle.
 */
export function stateOf(cycles: readonly SlaCycle[]): SlaState | undefined {
  const running = cycles.find((c) => c.state === 'ongoing');
  // A paused cycle is paused, breached or not: its breach stands, and only a completed cycle is met or breached late.
  if (running) return running.paused ? 'paused' : running.breached ? 'breached' : 'ongoing';
  const last = cycles.filter((c) => c.state === 'completed').at(-1);
  if (last) return last.breached ? 'breached' : 'met';
  return undefined;
}

/**
 * One SLA's facts from its cycles and the running cycle's breach time. A paused or completed cycle has no breach time
 * (it will not breach while it stays so); neither has a running one the tracker gives no goal for.
 */
export function cycleFacts(cycles: readonly SlaCycle[], breachTime: Date | null): CycleFacts | undefined {
  const state = stateOf(cycles);
  const first = cycles[0];
  if (state === undefined || first === undefined) return undefined;
  const running = cycles.find((c) => c.state === 'ongoing');
  const breachAt = running && !running.paused && breachTime ? breachTime.toISOString() : null;
  return { name: first.name, state, breach_at: breachAt };
}

/** The facts of the metrics that have an SLA (an absent one stays out of the stored JSON). */
export function slaFacts(byMetric: Record<SlaMetric, CycleFacts | undefined>): SlaFacts {
  const out: SlaFacts = {};
  for (const m of SLA_METRICS) {
    const f = byMetric[m];
    if (f) out[m] = f;
  }
  return out;
}

/**
 * What the stored copy said of `metric`. A row from before sla_facts has only its cycles: their state is known (found
 * by the SLA's name), their breach time not (`undefined`), so such a row's first comparison looks at the state alone
 * instead of announcing every request it re-reads.
 */
function before(
  prev: StoredSla,
  metric: SlaMetric,
  name: string,
): { state: SlaState; breach_at: string | null | undefined } | undefined {
  if (prev.sla_facts) return prev.sla_facts[metric];
  const state = stateOf(prev.sla.filter((c) => c.name === name));
  return state === undefined ? undefined : { state, breach_at: undefined };
}

/**
 * The metrics whose cycle differs from the stored copy's: a new SLA, another state, another breach time. `prev`
 * undefined: a request the store did not hold. A metric whose SLA is gone tells nothing (there is no state for it).
 */
export function changedCycles(prev: StoredSla | undefined, next: SlaFacts): { metric: SlaMetric; facts: CycleFacts }[] {
  const out: { metric: SlaMetric; facts: CycleFacts }[] = [];
  for (const metric of SLA_METRICS) {
    const now = next[metric];
    if (!now) continue;
    const was = prev ? before(prev, metric, now.name) : undefined;
    if (was && was.state === now.state && (was.breach_at === undefined || was.breach_at === now.breach_at)) continue;
    out.push({ metric, facts: now });
  }
  return out;
}

/** The clients whose mappings cover the request: the same test the reads use to decide who sees it. */
export function clientsSeeing(
  request: { organization_ids: string[]; project_key: string; labels: string[] },
  mappings: readonly MappingRow[],
): string[] {
  return [...new Set(mappings.filter((m) => covers(m, request)).map((m) => m.client_id))].sort();
}

/** The part of a synced record an event is made of. */
export interface SlaRecord {
  issue_key: string;
  summary: string;
  project_key: string;
  organization_ids: string[];
  labels: string[];
  updated_at: string;
  sla_facts: SlaFacts;
}

/** The events a copy that replaced `prev` in the store makes; none when no client sees the request. */
export function slaEvents(
  record: SlaRecord,
  prev: StoredSla | undefined,
  mappings: readonly MappingRow[],
): SlaChanged[] {
  const changed = changedCycles(prev, record.sla_facts);
  if (changed.length === 0) return [];
  const clientIds = clientsSeeing(record, mappings);
  if (clientIds.length === 0) return [];
  return changed.map(({ metric, facts }) => ({
    issue_key: record.issue_key,
    summary: record.summary,
    client_ids: clientIds,
    metric,
    state: facts.state,
    breach_at: facts.breach_at,
    at: record.updated_at,
  }));
}

/**
 * One id per cycle fact of one copy of the request: a sync retried after a failed page publishes the same ids (the
 * stream keeps one), while the same state reached again later (paused, resumed, paused) is a new copy and told again.
 */
export const slaMsgId = (e: Pick<SlaChanged, 'issue_key' | 'metric' | 'state' | 'breach_at' | 'at'>): string =>
  `sla:${e.issue_key}:${e.metric}:${e.state}:${e.breach_at ?? ''}:${e.at}`;
