import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { storedEmail } from '../../email-address.ts';
import { sendInvitation } from '../../email.ts';
import { createOneTimeToken } from '../../one-time-tokens.ts';
import { conflictOnDuplicate, sql, type IdentityHandler } from '../common.ts';
import { recordUser } from './audit.ts';
import { detail } from './detail.ts';

export const createUser =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.create'> =>
  async (input, { ctx }) => {
    requirePermission(ctx, 'users:write');
    const email = storedEmail(input.email);
    const display_name = input.display_name;
    const id = randomUUID();
    const em = deps.orm.em.fork();
    const token = await conflictOnDuplicate('a user with this e-mail already exists', () =>
      em.transactional(async (tx) => {
        await sql(tx, `INSERT INTO users (id, email, display_name, status) VALUES (?, ?, ?, 'invited')`, [
          id,
          email,
          display_name,
        ]);
        return createOneTimeToken(tx, deps, id, 'invite');
      }),
    );
    await sendInvitation(deps, { email, display_name }, token);
    await recordUser(deps, ctx, 'user.created', id, { email, display_name, status: 'invited' });
    return detail(deps.orm.em.fork(), ctx, id);
  };
