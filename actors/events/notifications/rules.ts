import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import { RULE_IMMUTABLE, type EscalationStep } from '../../../contracts/domains/events-notifications.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import { requireOnClient } from '../../../platform/scope.ts';
import type { RequestScope } from '../../../platform/serve.ts';
import { pgJson, toPgArray } from '../../../platform/stores/pg-values.ts';
import { pageOf, sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { matcherProblem } from './matchers.ts';
import { clientFilter, emptyPage, loadOwned, READ, RULE_COLUMNS, ruleOut, WRITE, type RuleRow } from './rows.ts';

const WHAT = 'notification rule';

/** What a create or update sets: the stored rule's own fields. */
type RuleInput = Omit<RuleRow, 'id' | 'client_id' | 'created_by' | 'created_at' | 'updated_at'>;

/**
 * A rule's environment and host must be of its client (404 otherwise, as any id out of reach), a host inside the
 * environment when both are given; its fields must fit its event.
 */
export async function checkPlace(
  deps: EventsDeps,
  scope: RequestScope<SystemCatalogue>,
  clientId: string,
  place: { environment_id: string | null; host_id: string | null },
): Promise<void> {
  const opts = { deadline: scope.deadline, traceparent: scope.traceparent };
  if (place.environment_id !== null) {
    const env = await deps.fleet.environment(scope.ctx, place.environment_id, opts);
    if (!env || env.client_id !== clientId) throw new DomainError('not_found', 'environment not found in this client');
  }
  if (place.host_id !== null) {
    const host = await deps.fleet.host(scope.ctx, place.host_id, opts);
    if (!host || host.client_id !== clientId) throw new DomainError('not_found', 'host not found in this client');
    if (place.environment_id !== null && host.environment_id !== place.environment_id)
      throw new DomainError('bad_request', 'host_id: the host is not in the given environment');
  }
}

function checkFields(b: RuleInput): void {
  if (b.event !== 'alert' && b.matchers.length > 0)
    throw new DomainError('bad_request', 'matchers: only an alert rule has label matchers');
  if (b.event !== 'agent_offline' && b.offline_minutes !== null)
    throw new DomainError('bad_request', 'offline_minutes: only an agent_offline rule has one');
  for (const m of b.matchers) {
    const problem = matcherProblem(m);
    if (problem) throw new DomainError('bad_request', `matchers: ${problem}`);
  }
  if (b.event === 'deploy_failed' && b.host_id !== null)
    throw new DomainError('bad_request', 'host_id: deploys belong to an environment or a client, not to a host');
  if (b.event !== 'sla_breach' && b.sla_warn_minutes !== null)
    throw new DomainError('bad_request', 'sla_warn_minutes: only an sla_breach rule has one');
  if (b.event !== 'audit' && b.audit_actions.length > 0)
    throw new DomainError('bad_request', 'audit_actions: only an audit rule has audit actions');
  if (b.event !== 'audit' && b.audit_global)
    throw new DomainError('bad_request', 'audit_global: only an audit rule has one');
  if (b.event === 'audit' && b.audit_actions.length === 0)
    throw new DomainError('bad_request', 'audit_actions: an audit rule names at least one action');
  if (CLIENT_WIDE.includes(b.event) && (b.environment_id !== null || b.host_id !== null))
    throw new DomainError(
      'bad_request',
      `${b.host_id !== null ? 'host_id' : 'environment_id'}: ${b.event} events belong to a client, not to an environment or a host`,
    );
  if (b.steps[0]!.after_minutes !== 0)
    throw new DomainError('bad_request', 'steps.0.after_minutes: the first step fires at once (0)');
}

/** Events of a whole client: service-desk requests, invoices and audit entries sit in no environment. */
const CLIENT_WIDE: readonly RuleInput['event'][] = ['sla_breach', 'invoice_review', 'audit'];

/**
 * What a rule tells must be what its author may read: the client's service-desk requests (servicedesk:read), invoices
 * (invoices:read; invoices belong to no client, so the permission on the rule's client is asked), the client's audit
 * entries (audit:read), and the global ones (a super admin only). Its notifications are read the same way (rows.ts).
 */
function checkReadable(scope: RequestScope<SystemCatalogue>, clientId: string, b: RuleInput): void {
  if (b.event === 'sla_breach') requireOnClient(scope.ctx, clientId, 'servicedesk:read', 'client');
  if (b.event === 'invoice_review') requireOnClient(scope.ctx, clientId, 'invoices:read', 'client');
  if (b.event === 'audit') requireOnClient(scope.ctx, clientId, 'audit:read', 'client');
  if (b.audit_global && scope.ctx.access?.super_admin !== true)
    throw new DomainError('forbidden', 'audit_global: only a super admin may be told of global audit entries');
}

/** Every channel a rule sends to is one of its client's; locked so it cannot be removed while the rule is written. */
async function checkChannels(tx: EntityManager, clientId: string, steps: EscalationStep[]): Promise<void> {
  const ids = [...new Set(steps.flatMap((s) => s.channel_ids))];
  const found = await sql<{ id: string }>(
    tx,
    `SELECT id FROM notification_channels WHERE id IN (?) AND client_id = ? FOR SHARE`,
    [ids, clientId],
  );
  const known = new Set(found.map((r) => r.id));
  const missing = ids.find((id) => !known.has(id));
  if (missing) throw new DomainError('not_found', `notification channel ${missing} not found in this client`);
}

const values = (b: RuleInput): unknown[] => [
  b.environment_id,
  b.host_id,
  b.name,
  b.event,
  b.severity,
  b.event === 'agent_offline' ? (b.offline_minutes ?? 5) : null,
  pgJson(b.matchers),
  b.event === 'sla_breach' ? b.sla_warn_minutes : null,
  toPgArray(b.event === 'audit' ? [...new Set(b.audit_actions)] : []),
  b.event === 'audit' && b.audit_global,
  b.group_window_minutes,
  pgJson(b.steps),
  b.enabled,
];

/** Rules (`notifications:*`): which events notify which channels, in which steps, with what severity. */
export function ruleHandlers(deps: EventsDeps): EventsHandlers {
  const load = (scope: RequestScope<SystemCatalogue>, id: string, perm: string) =>
    loadOwned<RuleRow>(deps.orm.em.fork(), scope.ctx, 'notification_rules', RULE_COLUMNS, id, perm, WHAT);
  return {
    'svc.events.notification_rules.list': async (q, { ctx }) => {
      const params: unknown[] = [];
      const where = clientFilter(ctx, q.client_id, params);
      if (where === null) return emptyPage(q);
      const parts = [where];
      if (q.event !== undefined) {
        parts.push('event = ?');
        params.push(q.event);
      }
      return pageOf(
        deps.orm.em.fork(),
        {
          columns: RULE_COLUMNS,
          from: `notification_rules WHERE ${parts.join(' AND ')}`,
          params,
          order: 'created_at DESC, id DESC',
        },
        q,
        (rows: RuleRow[]) => rows.map(ruleOut),
      );
    },

    'svc.events.notification_rules.get': async ({ id }, scope) => ruleOut(await load(scope, id, READ)),

    'svc.events.notification_rules.create': async (b, scope) => {
      requireOnClient(scope.ctx, b.client_id, WRITE, 'client');
      checkFields(b);
      checkReadable(scope, b.client_id, b);
      await checkPlace(deps, scope, b.client_id, b);
      const id = randomUUID();
      const row = await deps.orm.em.fork().transactional(async (tx) => {
        await checkChannels(tx, b.client_id, b.steps);
        const [row] = await sql<RuleRow>(
          tx,
          `INSERT INTO notification_rules (id, client_id, environment_id, host_id, name, event, severity, offline_minutes, matchers, sla_warn_minutes, audit_actions, audit_global, group_window_minutes, steps, enabled, created_by)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?::text[], ?, ?, ?::jsonb, ?, ?) RETURNING ${RULE_COLUMNS}`,
          [id, b.client_id, ...values(b), scope.ctx.principal.kind === 'user' ? scope.ctx.principal.user_id : null],
        );
        return row!;
      });
      await deps.audit.record(scope.ctx, {
        action: 'notification_rule.created',
        resource_type: 'notification_rule',
        resource_id: id,
        client_ids: [b.client_id],
        details: { rule: ruleOut(row) },
      });
      return ruleOut(row);
    },

    'svc.events.notification_rules.update': async (b, scope) => {
      const current = await load(scope, b.id, WRITE);
      refuseChanges(b, ruleOut(current), RULE_IMMUTABLE);
      checkFields(b);
      checkReadable(scope, current.client_id, b);
      await checkPlace(deps, scope, current.client_id, b);
      const after = await deps.orm.em.fork().transactional(async (tx) => {
        await checkChannels(tx, current.client_id, b.steps);
        const [row] = await sql<RuleRow>(
          tx,
          `UPDATE notification_rules SET environment_id = ?, host_id = ?, name = ?, event = ?, severity = ?, offline_minutes = ?,
             matchers = ?::jsonb, sla_warn_minutes = ?, audit_actions = ?::text[], audit_global = ?, group_window_minutes = ?,
             steps = ?::jsonb, enabled = ?, updated_at = now()
           WHERE id = ? RETURNING ${RULE_COLUMNS}`,
          [...values(b), b.id],
        );
        if (!row) throw new DomainError('not_found', `${WHAT} not found`);
        // Another event: what the rule opened for the old one ends with it, as on a delete.
        if (current.event !== b.event)
          await sql(
            tx,
            `UPDATE notifications SET status = 'resolved', resolved_at = now(), updated_at = now() WHERE rule_id = ? AND status = 'firing'`,
            [b.id],
          );
        return row;
      });
      await deps.audit.record(scope.ctx, {
        action: 'notification_rule.updated',
        resource_type: 'notification_rule',
        resource_id: b.id,
        client_ids: [current.client_id],
        details: { before: ruleOut(current), after: ruleOut(after) },
      });
      return ruleOut(after);
    },

    'svc.events.notification_rules.delete': async ({ id }, scope) => {
      const row = await load(scope, id, WRITE);
      // Its open notifications end with it (nothing could resolve or escalate them any more); they stay readable.
      await deps.orm.em.fork().transactional(async (tx) => {
        await sql(
          tx,
          `UPDATE notifications SET status = 'resolved', resolved_at = now(), updated_at = now() WHERE rule_id = ? AND status = 'firing'`,
          [id],
        );
        await sql(tx, `DELETE FROM notification_rules WHERE id = ?`, [id]);
      });
      await deps.audit.record(scope.ctx, {
        action: 'notification_rule.deleted',
        resource_type: 'notification_rule',
        resource_id: id,
        client_ids: [row.client_id],
        details: { client_id: row.client_id, name: row.name, event: row.event },
      });
      return {};
    },
  };
}
