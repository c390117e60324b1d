import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { canSee, iso, sql, visibleClients } from '../common.ts';

export interface AssignmentRow {
  client_id: string;
  client_name: string;
  client_slug: string;
  role_id: string;
  role_name: string;
  created_at: string;
}

/** A user's direct assignments, limited to the clients the caller may see users of. */
export async function assignmentsOf(
  em: EntityManager,
  ctx: CallerContext,
  userId: string,
  clientId?: string,
): Promise<AssignmentRow[]> {
  const rows = await sql<AssignmentRow>(
    em,
    `SELECT c.id AS client_id, c.name AS client_name, c.slug AS client_slug, r.id AS role_id, r.name AS role_name, ucr.created_at
       FROM user_client_roles ucr JOIN clients c ON c.id = ucr.client_id JOIN roles r ON r.id = ucr.role_id
      WHERE ucr.user_id = ?${clientId ? ' AND ucr.client_id = ?' : ''}
      ORDER BY lower(c.name), c.id`,
    clientId ? [userId, clientId] : [userId],
  );
  const visible = visibleClients(ctx, ['users:read']);
  return rows.filter((r) => canSee(visible, r.client_id));
}

export const assignmentOut = (a: AssignmentRow) => ({ ...a, created_at: iso(a.created_at) });

/** The answer to a change of one assignment: the assignment as the caller now sees it. */
export async function assignmentAfterChange(
  em: EntityManager,
  ctx: CallerContext,
  userId: string,
  clientId: string,
): Promise<ReturnType<typeof assignmentOut>> {
  const [row] = await assignmentsOf(em, ctx, userId, clientId);
  if (!row) throw new DomainError('not_found', 'assignment not found');
  return assignmentOut(row);
}
