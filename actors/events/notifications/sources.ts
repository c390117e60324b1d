import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { LabelMatcher } from '../../../contracts/domains/events-notifications.ts';
import { AlertGroupChanged, DeployRecorded } from '../../../contracts/domains/events-records.ts';
import { AgentStatusChanged } from '../../../contracts/domains/fleet-agents.ts';
import { InvoiceReviewChanged } from '../../../contracts/domains/invoice.ts';
import { SlaChanged } from '../../../contracts/domains/servicedesk.ts';
import { AuditEntry, streams, type EventSubject } from '../../../contracts/streams.ts';
import {
  publishDurable,
  RetryLaterError,
  runConsumer,
  type ConsumerHandle,
  type DeliveryMeta,
} from '../../../platform/jetstream.ts';
import { sqlStateOf } from '../../../platform/store-errors.ts';
import { toPgArray } from '../../../platform/stores/pg-values.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { auditActionsOf, auditTitle } from './audit-actions.ts';
import {
  acknowledge,
  matchingRules,
  openOrCount,
  recover,
  scheduleClose,
  type Cause,
  type NotifyDeps,
} from './incidents.ts';
import { matchesAll } from './matchers.ts';
import { NOTIFICATION_COLUMNS, RULE_COLUMNS, type NotificationRow, type RuleRow } from './rows.ts';

/** The events notifications react to, one durable each: agents going offline and back, alert groups, deploys. */

const OFFLINE_GROUP = 'agents-offline';

async function onAgentStatus(deps: NotifyDeps, e: AgentStatusChanged, meta: DeliveryMeta): Promise<void> {
  const em = deps.orm.em.fork();
  const at = new Date(e.at);
  try {
    // The latest state per host wins; an older event arriving late changes nothing.
    await sql(
      em,
      `INSERT INTO notification_host_states (host_id, client_id, environment_id, hostname, status, changed_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (host_id) DO UPDATE SET status = excluded.status, changed_at = excluded.changed_at, hostname = excluded.hostname,
         environment_id = excluded.environment_id
       WHERE notification_host_states.changed_at <= excluded.changed_at`,
      [e.host_id, e.client_id, e.environment_id, e.hostname, e.status, at],
    );
  } catch (err) {
    if (sqlStateOf(err) === '23503') return meta.log.debug('agent status dropped: its host was deleted');
    throw err;
  }
  const rules = await matchingRules(em, 'agent_offline', e, e.status === 'online');
  for (const rule of rules) {
    if (e.status === 'offline' && !rule.enabled) continue;
    if (e.status === 'offline') {
      const minutes = rule.offline_minutes ?? 5;
      await publishDurable(
        deps.nc,
        'svc.work.events.notify_check',
        {
          kind: 'offline',
          rule_id: rule.id,
          host_id: e.host_id,
          since: e.at,
          not_before: new Date(at.getTime() + minutes * 60_000).toISOString(),
        },
        { msgId: `offline-check:${rule.id}:${e.host_id}:${at.getTime()}` },
      );
    } else {
      await recover(deps, rule, OFFLINE_GROUP, e.host_id, at);
    }
  }
}

/** An agent still offline when its rule's minutes are up: it counts into the rule's notification of offline agents. */
export async function offlineCheck(
  deps: NotifyDeps,
  job: { rule_id: string; host_id: string; since: string },
): Promise<void> {
  const em = deps.orm.em.fork();
  const [state] = await sql<{
    status: string;
    changed_at: Date;
    hostname: string;
    client_id: string;
    environment_id: string | null;
  }>(
    em,
    `SELECT status, changed_at, hostname, client_id, environment_id FROM notification_host_states WHERE host_id = ?`,
    [job.host_id],
  );
  if (!state || state.status !== 'offline' || new Date(state.changed_at).getTime() > Date.parse(job.since)) return;
  const [rule] = await matchingRules(em, 'agent_offline', { ...state, host_id: job.host_id }).then((rs) =>
    rs.filter((r) => r.id === job.rule_id),
  );
  if (!rule) return;
  const minutes = rule.offline_minutes ?? 5;
  await openOrCount(deps, rule, {
    client_id: state.client_id,
    environment_id: rule.environment_id ?? (rule.host_id ? state.environment_id : null),
    host_id: rule.host_id,
    place: { environment_id: state.environment_id, host_id: job.host_id },
    group_key: OFFLINE_GROUP,
    member: job.host_id,
    label: state.hostname,
    title: `Agent offline for ${minutes} min or more: ${state.hostname}`,
    at: new Date(job.since),
    event_key: `offline:${job.host_id}:${job.since}`,
  });
}

/** Labels an alert group is matched on: each alert's own, with the group's name and severity where an alert lacks them. */
/**
 * The labels the event carries; an older event's are read from its group, which its publisher has committed by now
 * unless it is still in the transaction that published it (then the delivery is tried again).
 */
async function alertLabels(deps: NotifyDeps, e: AlertGroupChanged): Promise<Record<string, string>[]> {
  const base = { alertname: e.name, severity: e.severity };
  let labels = e.labels;
  if (labels === undefined) {
    const [row] = await sql<{ alerts: { labels?: Record<string, string> }[] }>(
      deps.orm.em.fork(),
      `SELECT alerts FROM alert_groups WHERE id = ?`,
      [e.id],
    );
    if (!row) throw new RetryLaterError('the alert group is not stored yet', 1_000);
    labels = row.alerts.map((a) => a.labels ?? {});
  }
  return labels.length > 0 ? labels.map((l) => ({ ...base, ...l })) : [base];
}

async function onAlert(deps: NotifyDeps, e: AlertGroupChanged, meta: DeliveryMeta): Promise<void> {
  const groupKey = `alert:${e.id}`;
  const em = deps.orm.em.fork();
  if (e.change === 'acknowledged') {
    const open = await sql<NotificationRow>(
      em,
      `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE group_key = ? AND client_id = ? AND status = 'firing'`,
      [groupKey, e.client_id],
    );
    for (const n of open) await acknowledge(deps, n.id, e.by ?? 'the alert group’s acknowledgement');
    return;
  }
  if (e.change === 'resolved') {
    for (const rule of await matchingRules(em, 'alert', e, true))
      await recover(deps, rule, groupKey, e.id, new Date(e.at));
    return;
  }
  const rules = await matchingRules(em, 'alert', e);
  if (rules.length === 0) return;
  const labels = await alertLabels(deps, e);
  for (const rule of rules) {
    if (!labels.some((l) => matchesAll(rule.matchers as LabelMatcher[], l))) continue;
    await openOrCount(deps, rule, {
      client_id: e.client_id,
      environment_id: e.environment_id,
      host_id: e.host_id,
      place: { environment_id: e.environment_id, host_id: e.host_id },
      group_key: groupKey,
      member: e.id,
      label: e.name,
      title: `Alert firing: ${e.name} (${e.severity})`,
      at: new Date(e.at),
      event_key: `alert:${meta.msgId ?? meta.streamSequence}`,
    });
  }
}

async function onDeploy(deps: NotifyDeps, e: DeployRecorded, meta: DeliveryMeta): Promise<void> {
  const rules = await matchingRules(deps.orm.em.fork(), 'deploy_failed', { ...e, host_id: null }, !e.failed);
  const groupKey = `deploy:${e.environment_id ?? 'client'}:${e.app}`;
  for (const rule of rules) {
    if (!e.failed) {
      await recover(deps, rule, groupKey, e.app, new Date(e.at));
      continue;
    }
    await openOrCount(deps, rule, {
      client_id: e.client_id,
      environment_id: e.environment_id,
      host_id: null,
      place: { environment_id: e.environment_id, host_id: null },
      group_key: groupKey,
      member: e.app,
      label: e.app,
      title: `Deploy failed: ${e.app}${e.revision ? ` at ${e.revision}` : ''} (${e.source})`,
      at: new Date(e.at),
      event_key: `deploy:${meta.msgId ?? meta.streamSequence}`,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Service-desk SLAs: a breach notifies (and ends the warning); a running cycle schedules a look at its warning time
// and at its breach; a completed cycle resolves both. A paused one waits.

const METRIC_LABEL = { first_response: 'first response', resolution: 'resolution' } as const;
const slaKey = (kind: 'sla' | 'sla-warn', issue: string, metric: SlaChanged['metric']): string =>
  `${kind}:${issue}:${metric}`;
const clientWide = (clientId: string) => ({ client_id: clientId, environment_id: null, host_id: null });
const nowhere = { environment_id: null, host_id: null };

interface SlaState {
  issue_key: string;
  metric: SlaChanged['metric'];
  summary: string;
  client_ids: string[];
  state: SlaChanged['state'];
  breach_at: Date | string | null;
}

function slaCause(clientId: string, st: SlaState, breached: boolean, eventKey: string, at: Date): Cause {
  const what = `${st.issue_key} ${METRIC_LABEL[st.metric]}`;
  const due =
    st.breach_at === null ? '' : ` at ${new Date(st.breach_at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return {
    client_id: clientId,
    ...nowhere,
    place: nowhere,
    group_key: slaKey(breached ? 'sla' : 'sla-warn', st.issue_key, st.metric),
    member: `${st.issue_key}:${st.metric}`,
    label: st.issue_key,
    title: breached ? `SLA breached: ${what} (${st.summary})` : `SLA about to breach${due}: ${what} (${st.summary})`,
    at,
    event_key: eventKey,
  };
}

async function onSla(deps: NotifyDeps, e: SlaChanged, meta: DeliveryMeta): Promise<void> {
  const em = deps.orm.em.fork();
  const at = new Date(e.at);
  // The latest state per request and metric wins: the delayed looks read it, and an older event (out of order, or
  // redelivered after a newer one) changes nothing at all.
  const applied = await sql<{ issue_key: string }>(
    em,
    `INSERT INTO notification_sla_states (issue_key, metric, summary, client_ids, state, breach_at, changed_at) VALUES (?, ?, ?, ?::uuid[], ?, ?, ?)
     ON CONFLICT (issue_key, metric) DO UPDATE SET summary = excluded.summary, client_ids = excluded.client_ids, state = excluded.state,
       breach_at = excluded.breach_at, changed_at = excluded.changed_at
     WHERE notification_sla_states.changed_at <= excluded.changed_at
     RETURNING issue_key`,
    [e.issue_key, e.metric, e.summary, toPgArray(e.client_ids), e.state, e.breach_at, at],
  );
  if (applied.length === 0) return meta.log.debug('SLA change older than the one stored: nothing to tell');
  const member = `${e.issue_key}:${e.metric}`;
  const running = e.breach_at !== null;
  for (const clientId of e.client_ids) {
    if (e.state === 'breached' && running) {
      for (const rule of await matchingRules(em, 'sla_breach', clientWide(clientId))) {
        await openOrCount(deps, rule, slaCause(clientId, e, true, `sla:${meta.msgId ?? meta.streamSequence}`, at));
        await recover(deps, rule, slaKey('sla-warn', e.issue_key, e.metric), member, at, 'breached');
      }
    } else if (e.state === 'ongoing' && running) {
      const breachAt = Date.parse(e.breach_at!);
      for (const rule of await matchingRules(em, 'sla_breach', clientWide(clientId))) {
        const due = rule.sla_warn_minutes === null ? [breachAt] : [breachAt - rule.sla_warn_minutes * 60_000, breachAt];
        for (const t of due) {
          await publishDurable(
            deps.nc,
            'svc.work.events.notify_check',
            {
              kind: 'sla_warn',
              rule_id: rule.id,
              issue_key: e.issue_key,
              metric: e.metric,
              breach_at: e.breach_at!,
              not_before: new Date(t).toISOString(),
            },
            { msgId: `sla-check:${rule.id}:${member}:${breachAt}:${t}` },
          );
        }
      }
    } else if (e.state === 'met' || e.state === 'breached') {
      // Completed, in time or late: what it opened ends. (Paused, or running without a goal: nothing changes.)
      const outcome = e.state === 'met' ? 'the SLA was met' : 'the request was answered after its SLA';
      for (const rule of await matchingRules(em, 'sla_breach', clientWide(clientId), true)) {
        await recover(deps, rule, slaKey('sla', e.issue_key, e.metric), member, at, outcome);
        await recover(deps, rule, slaKey('sla-warn', e.issue_key, e.metric), member, at, outcome);
      }
    }
  }
}

/**
 * A running SLA cycle at its warning time or its breach, as scheduled when it was seen: it notifies only if the cycle
 * is still running towards that same breach (not completed, paused or moved since).
 */
export async function slaCheck(
  deps: NotifyDeps,
  job: { rule_id: string; issue_key: string; metric: SlaChanged['metric']; breach_at: string; not_before: string },
): Promise<void> {
  const em = deps.orm.em.fork();
  const [st] = await sql<SlaState>(
    em,
    `SELECT issue_key, metric, summary, client_ids, state, breach_at FROM notification_sla_states WHERE issue_key = ? AND metric = ?`,
    [job.issue_key, job.metric],
  );
  const breachAt = Date.parse(job.breach_at);
  if (!st || st.state !== 'ongoing' || st.breach_at === null || new Date(st.breach_at).getTime() !== breachAt) return;
  const [rule] = await sql<RuleRow>(em, `SELECT ${RULE_COLUMNS} FROM notification_rules WHERE id = ? AND enabled`, [
    job.rule_id,
  ]);
  if (!rule || !st.client_ids.includes(rule.client_id)) return;
  const breached = Date.parse(job.not_before) >= breachAt;
  // A warning looked at after the breach is due says nothing: the breach's own look tells it.
  if (!breached && deps.clock.now() >= breachAt) return;
  const at = new Date(job.not_before);
  const key = `sla-check:${job.issue_key}:${job.metric}:${breachAt}:${breached}`;
  const member = `${st.issue_key}:${st.metric}`;
  const cause = slaCause(rule.client_id, st, breached, key, at);
  await openOrCount(deps, rule, cause);
  if (breached) await recover(deps, rule, slaKey('sla-warn', st.issue_key, st.metric), member, at, 'breached');
  // Completed while this look opened its notification: the completion's own handling may have run just before.
  const [after] = await sql<{ state: string; breach_at: Date | null }>(
    em,
    `SELECT state, breach_at FROM notification_sla_states WHERE issue_key = ? AND metric = ?`,
    [job.issue_key, job.metric],
  );
  const completed = after?.state === 'met' || (after?.state === 'breached' && after.breach_at === null);
  if (completed) {
    const outcome = after.state === 'met' ? 'the SLA was met' : 'the request was answered after its SLA';
    await recover(deps, rule, cause.group_key, member, at, outcome);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Invoices: entering review opens a notification per invoice; the review's outcome resolves it, naming it. Invoices
// belong to no client, so every client's invoice_review rules see them (their authors hold invoices:read).

async function invoiceRules(em: EntityManager, alsoDisabled: boolean): Promise<RuleRow[]> {
  return sql<RuleRow>(
    em,
    `SELECT ${RULE_COLUMNS} FROM notification_rules WHERE event = 'invoice_review' AND (enabled OR ?)`,
    [alsoDisabled],
  );
}

async function onInvoiceReview(deps: NotifyDeps, e: InvoiceReviewChanged): Promise<void> {
  const em = deps.orm.em.fork();
  const at = new Date(e.at);
  const groupKey = `invoice:${e.invoice_id}`;
  if (e.status !== 'needs_review') {
    const outcome = `${e.status} by ${e.by}${e.comment ? `: ${e.comment}` : ''}`;
    for (const rule of await invoiceRules(em, true)) await recover(deps, rule, groupKey, e.invoice_id, at, outcome);
    return;
  }
  for (const rule of await invoiceRules(em, false)) {
    await openOrCount(deps, rule, {
      client_id: rule.client_id,
      ...nowhere,
      place: nowhere,
      group_key: groupKey,
      member: e.invoice_id,
      label: e.display_number,
      title: `Invoice ${e.display_number} waiting for review: ${e.customer_key}, ${e.total_amount} ${e.currency} (${e.period_start} – ${e.period_end})`,
      at,
      event_key: `invoice:${e.invoice_id}:${e.version}`,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Audit actions: each entry is a cause of its own, counted into its action's notification while the rule's grouping
// window lasts; the window's end closes it without a message. An entry about several clients is told to none of them
// alone: the audit log shows it only to those who read every client it names.

async function onAudit(deps: NotifyDeps, e: AuditEntry): Promise<void> {
  const em = deps.orm.em.fork();
  const actions = auditActionsOf(e);
  const rules = await sql<RuleRow>(
    em,
    `SELECT ${RULE_COLUMNS} FROM notification_rules
      WHERE event = 'audit' AND enabled AND audit_actions && ?::text[]
        AND (CASE WHEN cardinality(?::uuid[]) = 0 THEN audit_global ELSE ?::uuid[] <@ ARRAY[client_id] END)`,
    [toPgArray(actions), toPgArray(e.client_ids), toPgArray(e.client_ids)],
  );
  const at = new Date(e.created_at);
  for (const rule of rules) {
    const action = actions.find((a) => rule.audit_actions.includes(a))!;
    const n = await openOrCount(deps, rule, {
      client_id: rule.client_id,
      ...nowhere,
      place: nowhere,
      // Global entries (no client) group apart: only super admins read them (rows.ts, notificationsReadable).
      group_key: `${e.client_ids.length === 0 ? 'audit-global' : 'audit'}:${action}`,
      member: e.id,
      label: action,
      title: auditTitle(e, action),
      at,
      event_key: `audit:${e.id}`,
    });
    await scheduleClose(deps, n, rule);
  }
}

function source<T>(
  deps: NotifyDeps,
  durable: string,
  subject: EventSubject,
  schema: z.ZodType<T>,
  handle: (deps: NotifyDeps, e: T, meta: DeliveryMeta) => Promise<void>,
): Promise<ConsumerHandle> {
  return runConsumer<T>({
    nc: deps.nc,
    stream: streams.SVC_EVENTS.name,
    durable,
    filterSubjects: [subject],
    schema,
    // New events only: a first start does not notify the history of the stream.
    startAt: 'new',
    concurrency: 8,
    maxAckPending: 10_000,
    maxDeliver: 8,
    backoffMs: [500, 2_000, 10_000, 30_000],
    log: deps.log,
    handler: (e, meta) => handle(deps, e, meta),
  });
}

export async function startSources(deps: NotifyDeps): Promise<ConsumerHandle[]> {
  return [
    await source(deps, 'events-notify-agent-status', 'svc.evt.fleet.agent_status', AgentStatusChanged, onAgentStatus),
    await source(deps, 'events-notify-alert', 'svc.evt.events.alert', AlertGroupChanged, onAlert),
    await source(deps, 'events-notify-deploy', 'svc.evt.events.deploy', DeployRecorded, onDeploy),
    await source(deps, 'events-notify-sla', 'svc.evt.servicedesk.sla', SlaChanged, onSla),
    await source(deps, 'events-notify-invoice', 'svc.evt.invoice.review', InvoiceReviewChanged, onInvoiceReview),
    await source(deps, 'events-notify-audit', 'svc.evt.audit.recorded', AuditEntry, onAudit),
  ];
}
