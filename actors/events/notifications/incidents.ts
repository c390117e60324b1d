import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { RuleEvent } from '../../../contracts/domains/events-notifications.ts';
import { publishDurable } from '../../../platform/jetstream.ts';
import { sqlStateOf } from '../../../platform/store-errors.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps } from '../deps.ts';
import type { AckLinks } from './ack-link.ts';
import { enqueueDeliveries, type DeliverySpec } from './deliveries.ts';
import { activeWindowAt, type Occurrence } from './maintenance-windows.ts';
import { notificationMessage, type MessageKind } from './messages.ts';
import {
  hasSourcePermission,
  NOTIFICATION_COLUMNS,
  RULE_COLUMNS,
  WINDOW_COLUMNS,
  type NotificationRow,
  type RuleRow,
  type WindowRow,
} from './rows.ts';

/**
 * The life of a notification: opened by a rule for a cause (a group key: the rule's offline agents, an alert group,
 * an app's failed deploys), counted while the same cause repeats, escalated step by step until someone acknowledges,
 * resolved when none of its members is active any more. A maintenance window over its scope holds it back: it is
 * recorded as suppressed, and notifies once when the window ends if it is still firing. Every step is on the timeline.
 */

export interface NotifyDeps extends EventsDeps {
  ack: AckLinks;
}

/** Where the cause sits, and what it is. */
export interface Cause {
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  /** Where the cause itself sits (an offline agent's environment and host): windows over it hold the notification. */
  place: { environment_id: string | null; host_id: string | null };
  group_key: string;
  /** One thing the notification stands for (a host, an alert group); it resolves once none is active. */
  member: string;
  /** How the member is named in messages (a hostname, an alert's name). */
  label: string;
  /** The title when this cause opens the notification. */
  title: string;
  at: Date;
  /** The event that brought it: a redelivered event counts once. */
  event_key: string;
}

/**
 * The rules of an event over a place: the enabled ones, or (`alsoDisabled`, for a recovery) the disabled ones too, so
 * that what a rule opened before it was disabled still resolves.
 */
export async function matchingRules(
  em: EntityManager,
  event: RuleEvent,
  where: { client_id: string; environment_id: string | null; host_id: string | null },
  alsoDisabled = false,
): Promise<RuleRow[]> {
  return sql<RuleRow>(
    em,
    `SELECT ${RULE_COLUMNS} FROM notification_rules
      WHERE (enabled OR ?) AND event = ? AND client_id = ?
        AND (environment_id IS NULL OR environment_id = ?) AND (host_id IS NULL OR host_id = ?)`,
    [alsoDisabled, event, where.client_id, where.environment_id, where.host_id],
  );
}

/** The maintenance window in force over a place at an instant (the one ending last when several are). */
export async function windowOver(
  em: EntityManager,
  where: { client_id: string; environment_id: string | null; host_id: string | null },
  at: Date,
): Promise<{ window: WindowRow; occurrence: Occurrence } | null> {
  const windows = await sql<WindowRow>(
    em,
    `SELECT ${WINDOW_COLUMNS} FROM maintenance_windows
      WHERE client_id = ? AND (environment_id IS NULL OR environment_id = ?) AND (host_id IS NULL OR host_id = ?)`,
    [where.client_id, where.environment_id, where.host_id],
  );
  let best: { window: WindowRow; occurrence: Occurrence } | null = null;
  for (const w of windows) {
    const o = activeWindowAt(w, at);
    if (o && (!best || o.end > best.occurrence.end)) best = { window: w, occurrence: o };
  }
  return best;
}

/** A row of the timeline about a notification (stored once per key), where its first cause sat. */
export async function onTimeline(
  em: EntityManager,
  n: NotificationRow,
  key: string,
  at: Date,
  title: string,
  description: string,
): Promise<void> {
  // The timeline is read with notifications:read alone, and these tell of what needs its own permission (and sit on
  // no host or environment): their steps are read on the notification itself.
  if (hasSourcePermission(n.event)) return;
  try {
    await sql(
      em,
      `INSERT INTO timeline_events (id, source_key, client_id, environment_id, host_id, event_type, "timestamp", title, description)
       VALUES (?, ?, ?, ?, ?, 'notification', ?, ?, ?) ON CONFLICT (source_key) DO NOTHING`,
      [
        randomUUID(),
        `notification:${n.id}:${key}`,
        n.client_id,
        n.place_environment_id ?? n.environment_id,
        n.place_host_id ?? n.host_id,
        at,
        title,
        description,
      ],
    );
  } catch (err) {
    // Its host or environment deleted meanwhile: the notification's own rows go with it.
    if (sqlStateOf(err) !== '23503') throw err;
  }
}

const channelsOf = (rule: RuleRow, upToStep: number): string[] => [
  ...new Set(rule.steps.slice(0, upToStep + 1).flatMap((s) => s.channel_ids)),
];

/** The deliveries of one message of a notification to some channels. */
function specs(
  deps: NotifyDeps,
  n: NotificationRow,
  kind: MessageKind,
  channels: string[],
  key: string,
  suppressed: string | null,
  outcome?: string,
): DeliverySpec[] {
  const at = new Date(deps.clock.now());
  const payload = notificationMessage(n, kind, at, deps.ack.url(n.id, at.getTime()), outcome);
  return channels.map((channel_id) => ({
    channel_id,
    client_id: n.client_id,
    notification_id: n.id,
    kind,
    step: n.step,
    dedupe_key: `${n.id}:${key}:${channel_id}`,
    suppressed,
    payload,
  }));
}

/** Where a notification's windows are looked for. */
const placeOf = (n: NotificationRow) => ({
  client_id: n.client_id,
  environment_id: n.place_environment_id,
  host_id: n.place_host_id,
});

const held = (w: WindowRow): string => `held back by the maintenance window “${w.name}”`;

async function scheduleEscalation(deps: NotifyDeps, n: NotificationRow, rule: RuleRow, from: Date): Promise<void> {
  const next = rule.steps[n.step + 1];
  if (!next) return;
  await publishDurable(
    deps.nc,
    'svc.work.events.notify_check',
    {
      kind: 'escalate',
      notification_id: n.id,
      step: n.step + 1,
      not_before: new Date(from.getTime() + next.after_minutes * 60_000).toISOString(),
    },
    { msgId: `escalate:${n.id}:${n.step + 1}` },
  );
}

async function scheduleWindowEnd(deps: NotifyDeps, n: NotificationRow, end: Date): Promise<void> {
  await publishDurable(
    deps.nc,
    'svc.work.events.notify_check',
    { kind: 'window_end', notification_id: n.id, not_before: end.toISOString() },
    { msgId: `window-end:${n.id}:${end.getTime()}` },
  );
}

/**
 * The first message of a notification: sent, or held back by a window (then looked at again when it ends). Made
 * again when the event that opened it is redelivered (a crash midway): what was decided the first time stands, and
 * each piece (deliveries, timeline rows, the next check) is made once.
 */
async function firstMessage(deps: NotifyDeps, em: EntityManager, n: NotificationRow, rule: RuleRow): Promise<void> {
  const now = new Date(deps.clock.now());
  const channels = channelsOf(rule, 0);
  if (n.last_sent_at === null) {
    const window = await windowOver(em, placeOf(n), now);
    if (window || n.suppressed) {
      const reason = window ? held(window.window) : 'held back by a maintenance window';
      const end = window?.occurrence.end ?? now;
      await sql(em, `UPDATE notifications SET suppressed = true, updated_at = now() WHERE id = ?`, [n.id]);
      await enqueueDeliveries(deps, em, specs(deps, n, 'firing', channels, 'firing', reason));
      await onTimeline(
        em,
        n,
        'suppressed',
        now,
        `Notification held back: ${n.title}`,
        `${rule.name}: ${reason} until ${end.toISOString()}.`,
      );
      await scheduleWindowEnd(deps, n, end);
      return;
    }
    await sql(em, `UPDATE notifications SET last_sent_at = ?, updated_at = now() WHERE id = ?`, [now, n.id]);
  }
  await enqueueDeliveries(deps, em, specs(deps, n, 'firing', channels, 'firing', null));
  await onTimeline(
    em,
    n,
    'notified',
    now,
    `Notified: ${n.title}`,
    `${rule.name} (${n.severity}) sent to ${channels.length} channel(s), step 1 of ${rule.steps.length}.`,
  );
  await scheduleEscalation(deps, n, rule, n.last_sent_at ? new Date(n.last_sent_at) : now);
}

/**
 * A cause seen by a rule: opens the rule's notification for its group key, or counts into the open one (a repeat
 * after the rule's grouping window is sent again, with the count).
 */
export async function openOrCount(deps: NotifyDeps, rule: RuleRow, c: Cause): Promise<NotificationRow> {
  const em = deps.orm.em.fork();
  const { n, inserted, counted } = await em.transactional(async (tx) => {
    const [row] = await sql<NotificationRow & { inserted: boolean }>(
      tx,
      `INSERT INTO notifications (id, client_id, rule_id, environment_id, host_id, place_environment_id, place_host_id, event, severity, group_key, title, status, count, last_event_key, first_at, last_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'firing', 1, ?, ?, ?)
       ON CONFLICT (rule_id, group_key) WHERE status = 'firing'
         DO UPDATE SET last_at = GREATEST(notifications.last_at, excluded.last_at), updated_at = now()
       RETURNING ${NOTIFICATION_COLUMNS}, (xmax = 0) AS inserted`,
      [
        randomUUID(),
        c.client_id,
        rule.id,
        c.environment_id,
        c.host_id,
        c.place.environment_id,
        c.place.host_id,
        rule.event,
        rule.severity,
        c.group_key,
        c.title,
        c.event_key,
        c.at,
        c.at,
      ],
    );
    const n = row!;
    // A member new to the notification (or back after it recovered) counts once; the first is counted by the insert.
    const [member] = await sql<{ fresh: boolean }>(
      tx,
      `INSERT INTO notification_members (notification_id, member, label, active) VALUES (?, ?, ?, true)
       ON CONFLICT (notification_id, member) DO UPDATE SET active = true WHERE NOT notification_members.active
       RETURNING (xmax = 0) AS fresh`,
      [n.id, c.member, c.label],
    );
    let counted = false;
    if (!n.inserted && member && n.last_event_key !== c.event_key) {
      const [after] = await sql<NotificationRow>(
        tx,
        `UPDATE notifications SET count = count + 1, last_event_key = ?, updated_at = now() WHERE id = ? RETURNING ${NOTIFICATION_COLUMNS}`,
        [c.event_key, n.id],
      );
      Object.assign(n, after);
      counted = true;
    }
    return { n, inserted: n.inserted, counted };
  });
  if (inserted || (n.count === 1 && n.last_event_key === c.event_key)) {
    // The first message; on a redelivered event it is made again (its deliveries are made once, by their keys).
    await firstMessage(deps, em, n, rule);
    return n;
  }
  if (counted && !n.suppressed && n.acknowledged_at === null) {
    const since = n.last_sent_at ? new Date(n.last_sent_at).getTime() : 0;
    const now = deps.clock.now();
    if (now - since >= rule.group_window_minutes * 60_000 && !(await windowOver(em, placeOf(n), new Date(now)))) {
      const [sent] = await sql<NotificationRow>(
        em,
        `UPDATE notifications SET last_sent_at = ?, updated_at = now() WHERE id = ? AND last_sent_at IS NOT DISTINCT FROM ? RETURNING ${NOTIFICATION_COLUMNS}`,
        [new Date(now), n.id, n.last_sent_at],
      );
      if (sent)
        await enqueueDeliveries(
          deps,
          em,
          specs(deps, sent, 'repeat', channelsOf(rule, sent.step), `repeat:${sent.count}`, null),
        );
    }
  }
  return n;
}

/** A member recovered: the notification resolves once none of its members is active, and says so where it was sent. */
export async function recover(
  deps: NotifyDeps,
  rule: RuleRow,
  groupKey: string,
  member: string,
  at: Date,
  outcome?: string,
): Promise<NotificationRow | null> {
  const em = deps.orm.em.fork();
  const resolved = await em.transactional(async (tx) => {
    const [open] = await sql<NotificationRow>(
      tx,
      `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE rule_id = ? AND group_key = ? AND status = 'firing' FOR UPDATE`,
      [rule.id, groupKey],
    );
    if (!open) {
      // Resolved by this same event before (a redelivery after a crash): its resolved message is made again, once.
      const [before] = await sql<NotificationRow>(
        tx,
        `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE rule_id = ? AND group_key = ? AND status = 'resolved' AND resolved_at = ?
          ORDER BY updated_at DESC LIMIT 1`,
        [rule.id, groupKey, at],
      );
      return before ?? null;
    }
    await sql(tx, `UPDATE notification_members SET active = false WHERE notification_id = ? AND member = ?`, [
      open.id,
      member,
    ]);
    const [left] = await sql<{ n: number }>(
      tx,
      `SELECT count(*)::int AS n FROM notification_members WHERE notification_id = ? AND active`,
      [open.id],
    );
    if ((left?.n ?? 0) > 0) return null;
    const [row] = await sql<NotificationRow>(
      tx,
      `UPDATE notifications SET status = 'resolved', resolved_at = ?, updated_at = now() WHERE id = ? RETURNING ${NOTIFICATION_COLUMNS}`,
      [at, open.id],
    );
    return row ?? null;
  });
  if (!resolved) return null;
  const now = new Date(deps.clock.now());
  const window = resolved.suppressed ? null : await windowOver(em, placeOf(resolved), now);
  const reason = resolved.suppressed
    ? 'its notification was held back by a maintenance window'
    : window
      ? held(window.window)
      : null;
  await enqueueDeliveries(
    deps,
    em,
    specs(deps, resolved, 'resolved', channelsOf(rule, resolved.step), 'resolved', reason, outcome),
  );
  const how = outcome ? `Resolved: ${outcome}` : 'Resolved';
  await onTimeline(
    em,
    resolved,
    'resolved',
    now,
    `Resolved: ${resolved.title}`,
    reason ? `${how}; the resolved notification was ${reason.replace(/^its notification was /, '')}.` : `${how}.`,
  );
  return resolved;
}

/** Acknowledges a notification (the first acknowledgement stands): its escalation stops. */
export async function acknowledge(
  deps: EventsDeps,
  id: string,
  by: string,
): Promise<{ row: NotificationRow; now: boolean } | null> {
  const em = deps.orm.em.fork();
  const [row] = await sql<NotificationRow>(
    em,
    `UPDATE notifications SET acknowledged_at = ?, acknowledged_by = ?, updated_at = now()
      WHERE id = ? AND acknowledged_at IS NULL RETURNING ${NOTIFICATION_COLUMNS}`,
    [new Date(deps.clock.now()), by, id],
  );
  if (row) {
    await onTimeline(em, row, 'acknowledged', new Date(deps.clock.now()), `Acknowledged: ${row.title}`, `By ${by}.`);
    return { row, now: true };
  }
  const [existing] = await sql<NotificationRow>(em, `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE id = ?`, [
    id,
  ]);
  return existing ? { row: existing, now: false } : null;
}

/** The next escalation step, when the notification is still firing, sent and not acknowledged. */
export async function escalate(deps: NotifyDeps, id: string, step: number): Promise<void> {
  const em = deps.orm.em.fork();
  const [current] = await sql<NotificationRow>(em, `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE id = ?`, [
    id,
  ]);
  if (!current) return;
  // A window begun since it was sent holds the next step back until the window ends.
  const window = await windowOver(em, placeOf(current), new Date(deps.clock.now()));
  if (window && current.status === 'firing' && current.acknowledged_at === null) {
    await publishDurable(
      deps.nc,
      'svc.work.events.notify_check',
      { kind: 'escalate', notification_id: id, step, not_before: window.occurrence.end.toISOString() },
      { msgId: `escalate:${id}:${step}:${window.occurrence.end.getTime()}` },
    );
    return;
  }
  if (!current.rule_id) return;
  const [rule] = await sql<RuleRow>(em, `SELECT ${RULE_COLUMNS} FROM notification_rules WHERE id = ? AND enabled`, [
    current.rule_id,
  ]);
  const target = rule?.steps[step];
  if (!rule || !target) return;
  // `step <= ?`: a check repeated after a crash makes the step's pieces again (each once) and schedules the next.
  const [n] = await sql<NotificationRow>(
    em,
    `UPDATE notifications SET step = ?, updated_at = now()
      WHERE id = ? AND step <= ? AND status = 'firing' AND acknowledged_at IS NULL AND NOT suppressed
      RETURNING ${NOTIFICATION_COLUMNS}`,
    [step, id, step],
  );
  if (!n) return;
  const now = new Date(deps.clock.now());
  await enqueueDeliveries(deps, em, specs(deps, n, 'escalation', target.channel_ids, `escalation:${step}`, null));
  await onTimeline(
    em,
    n,
    `escalated:${step}`,
    now,
    `Escalated to step ${step + 1}: ${n.title}`,
    `Not acknowledged within ${target.after_minutes} minute(s): sent to the next ${target.channel_ids.length} channel(s).`,
  );
  await scheduleEscalation(deps, n, rule, now);
}

/** A window over a held-back notification ended: if it is still firing (and no other window holds it), it notifies. */
export async function windowEnded(deps: NotifyDeps, id: string): Promise<void> {
  const em = deps.orm.em.fork();
  const [n] = await sql<NotificationRow>(
    em,
    `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE id = ? AND status = 'firing'`,
    [id],
  );
  if (!n?.rule_id) return;
  if (!n.suppressed) {
    // Released before (a repeated check after a crash): what it sent then is sent, once.
    const [rule] = await sql<RuleRow>(em, `SELECT ${RULE_COLUMNS} FROM notification_rules WHERE id = ?`, [n.rule_id]);
    if (rule) await enqueueDeliveries(deps, em, specs(deps, n, 'firing', channelsOf(rule, 0), 'after-window', null));
    return;
  }
  const now = new Date(deps.clock.now());
  const still = await windowOver(em, placeOf(n), now);
  if (still) {
    await scheduleWindowEnd(deps, n, still.occurrence.end);
    return;
  }
  const [rule] = await sql<RuleRow>(em, `SELECT ${RULE_COLUMNS} FROM notification_rules WHERE id = ? AND enabled`, [
    n.rule_id,
  ]);
  if (!rule) return;
  const [sent] = await sql<NotificationRow>(
    em,
    `UPDATE notifications SET suppressed = false, last_sent_at = ?, updated_at = now() WHERE id = ? AND suppressed RETURNING ${NOTIFICATION_COLUMNS}`,
    [now, id],
  );
  if (!sent) return;
  await enqueueDeliveries(deps, em, specs(deps, sent, 'firing', channelsOf(rule, 0), 'after-window', null));
  await onTimeline(
    em,
    sent,
    'after-window',
    now,
    `Notified after maintenance: ${sent.title}`,
    `Still firing when the maintenance window ended.`,
  );
  await scheduleEscalation(deps, sent, rule, now);
}

/**
 * A one-off notification (each cause happens once: an audit action) ends when its grouping window does, without a
 * message: what came within the window was counted into it, what comes after opens a new one.
 */
export async function closeQuietly(deps: NotifyDeps, id: string): Promise<void> {
  const em = deps.orm.em.fork();
  const [n] = await sql<NotificationRow>(
    em,
    `SELECT ${NOTIFICATION_COLUMNS} FROM notifications WHERE id = ? AND status = 'firing'`,
    [id],
  );
  if (!n) return;
  if (n.suppressed) {
    // Held back by a window: it is told when the window ends (windowEnded), and closed after that.
    await publishDurable(
      deps.nc,
      'svc.work.events.notify_check',
      { kind: 'close', notification_id: id, not_before: new Date(deps.clock.now() + 60_000).toISOString() },
      { msgId: `close:${id}:${deps.clock.now()}` },
    );
    return;
  }
  await sql(
    em,
    `UPDATE notifications SET status = 'resolved', resolved_at = ?, updated_at = now() WHERE id = ? AND status = 'firing' AND NOT suppressed`,
    [new Date(deps.clock.now()), id],
  );
}

/** Closes a one-off notification when its rule's grouping window is over (closeQuietly). */
export async function scheduleClose(deps: NotifyDeps, n: NotificationRow, rule: RuleRow): Promise<void> {
  const end = new Date(n.first_at).getTime() + rule.group_window_minutes * 60_000;
  await publishDurable(
    deps.nc,
    'svc.work.events.notify_check',
    { kind: 'close', notification_id: n.id, not_before: new Date(end).toISOString() },
    { msgId: `close:${n.id}` },
  );
}
