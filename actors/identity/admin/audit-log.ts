import { requirePermission } from '../../../contracts/access.ts';
import type { IdentityDeps } from '../deps.ts';
import { iso, offsetOf, sql, type IdentityHandlers } from './common.ts';

interface AuditRow {
  id: string;
  actor_id: string | null;
  actor_email: string | null;
  actor_type: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: Record<string, unknown> | string | null;
  ip_address: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: string;
}

/** The audit log, newest first. Entries are written by the audit actor from the event stream. */
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
      if (q.actor_id !== undefined) add('actor_id = ?', q.actor_id);
      if (q.action !== undefined) add('action = ?', q.action);
      if (q.resource_type !== undefined) add('resource_type = ?', q.resource_type);
      if (q.resource_id !== undefined) add('resource_id = ?', q.resource_id);
      // Both bounds inclusive; RFC 3339 with any offset.
      if (q.from !== undefined) add('created_at >= ?', new Date(q.from));
      if (q.to !== undefined) add('created_at <= ?', new Date(q.to));
      const filter = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
      const em = deps.orm.em.fork();
      const [count] = await sql<{ n: number }>(em, `SELECT count(*)::int AS n FROM audit_log ${filter}`, params);
      const rows = await sql<AuditRow>(
        em,
        `SELECT id, actor_id, actor_email, actor_type, action, resource_type, resource_id, details, ip_address, user_agent, request_id, created_at
           FROM audit_log ${filter} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
        [...params, q.per_page, offsetOf(q.page, q.per_page)],
      );
      const items = rows.map((r) => ({
        ...r,
        details: typeof r.details === 'string' ? (JSON.parse(r.details) as Record<string, unknown>) : (r.details ?? {}),
        created_at: iso(r.created_at),
      }));
      return { items, total: count?.n ?? 0, page: q.page, per_page: q.per_page };
    },
  };
}
