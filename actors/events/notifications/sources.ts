import type { z } from 'zod';
import type { LabelMatcher } from '../../../contracts/domains/events-notifications.ts';
import { AlertGroupChanged, DeployRecorded } from '../../../contracts/domains/events-records.ts';
import { AgentStatusChanged } from '../../../contracts/domains/fleet-agents.ts';
import { streams, type EventSubject } from '../../../contracts/streams.ts';
import { publishDurable, runConsumer, type ConsumerHandle, type DeliveryMeta } from '../../../platform/jetstream.ts';
import { sqlStateOf } from '../../../platform/store-errors.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { acknowledge, matchingRules, openOrCount, recover, type NotifyDeps } from './incidents.ts';
import { matchesAll } from './matchers.ts';
import { NOTIFICATION_COLUMNS, type NotificationRow } from './rows.ts';

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
async function alertLabels(deps: NotifyDeps, e: AlertGroupChanged): Promise<Record<string, string>[]> {
  const [row] = await sql<{ alerts: { labels?: Record<string, string> }[] }>(
    deps.orm.em.fork(),
    `SELECT alerts FROM alert_groups WHERE id = ?`,
    [e.id],
  );
  const base = { alertname: e.name, severity: e.severity };
  const alerts = row?.alerts ?? [];
  return alerts.length > 0 ? alerts.map((a) => ({ ...base, ...(a.labels ?? {}) })) : [base];
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
  ];
}
