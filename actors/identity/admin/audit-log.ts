import { clientsWith, requirePermission } from '../../../contracts/access.ts';
import type { IdentityDeps } from '../deps.ts';
import { toPgArray } from '../../../platform/stores/pg-values.ts';
import { iso, pageOf, type IdentityHandlers } from './common.ts';

interface AuditRow {
  id: string;
  actor_id: string | null;
  actor_email: string | null;
  actor_type: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  client_ids: string[];
  details: Record<string, unknown> | string | null;
  ip_address: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: string;
}

const COLUMNS =
  'id, actor_id, actor_email, actor_type, action, resource_type, resource_id, client_ids, details, ip_address, user_agent, request_id, created_at';

/**
 * The audit log, newest first. Entries are written by the audit actor from the event stream. A caller sees an entry
 * only with audit:read on every client it names: an entry about several clients carries each one's data (ids, scopes,
 * grants), and changing such a target already needs the permission on every client it reaches. Entries naming no
 * client (logins, users, roles) are for super admins and all-client holders alone. Filtered in SQL, so totals count
 * only what the caller sees.
 */
export function auditLogHandlers(deps: IdentityDeps): IdentityHandlers {
  return {
    'svc.identity.audit.list': async (q, { ctx }) => {
      requirePermission(ctx, 'audit:read');
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (clause: string, value: unknown): void => {
        where.push(clause);
        params.push(value);
      };
      const visible = clientsWith(ctx, 'audit:read');
      if (visible !== 'all') add('cardinality(client_ids) > 0 AND client_ids <@ ?::uuid[]', toPgArray(visible));
      if (q.actor_id !== undefined) add('actor_id = ?', q.actor_id);
      if (q.action !== undefined) add('action = ?', q.action);
      if (q.resource_type !== undefined) add('resource_type = ?', q.resource_type);
      if (q.resource_id !== undefined) add('resource_id = ?', q.resource_id);
      // Both bounds inclusive; RFC 3339 with any offset.
      if (q.from !== undefined) add('created_at >= ?', new Date(q.from));
      if (q.to !== undefined) add('created_at <= ?', new Date(q.to));
      const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
      return pageOf(
        deps.orm.em.fork(),
        { columns: COLUMNS, from: `audit_log${filter}`, params, order: 'created_at DESC, id DESC' },
        q,
        (rows: AuditRow[]) =>
          rows.map((r) => ({
            ...r,
            details:
              typeof r.details === 'string' ? (JSON.parse(r.details) as Record<string, unknown>) : (r.details ?? {}),
            created_at: iso(r.created_at),
          })),
      );
    },
  };
}
