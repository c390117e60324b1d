import { randomBytes, randomUUID } from 'node:crypto';
import { requirePermission } from '../../../../contracts/access.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import { loadEnvironment } from '../../scope.ts';
import type { EnrolmentDeps, EnrolmentHandlers } from './deps.ts';
import { sha256, TOKEN_PREFIX } from './install-token.ts';

/** `svc.fleet.install_tokens.create`: a one-time token that lets one agent enrol into an environment. */
export function installTokenCreateHandlers(deps: EnrolmentDeps): EnrolmentHandlers {
  return {
    'svc.fleet.install_tokens.create': async ({ environment_id, expires_in_seconds }, { ctx }) => {
      requirePermission(ctx, 'agents:update');
      const em = deps.orm.em.fork();
      const env = await loadEnvironment(em, ctx, environment_id, 'agents:update');
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const id = randomUUID();
      const expiresAt = new Date(deps.clock.now() + expires_in_seconds * 1000);
      const by =
        ctx.principal.kind === 'user'
          ? ctx.principal.user_id
          : ctx.principal.kind === 'service_account'
            ? ctx.principal.service_account_id
            : null;
      await sql(
        em,
        `INSERT INTO install_tokens (id, environment_id, client_id, token_hash, expires_at, created_by) VALUES (?, ?, ?, ?, ?, ?)`,
        [id, env.id, env.client_id, sha256(token), expiresAt, by],
      );
      await deps.audit.record(ctx, {
        action: 'install_token.created',
        resource_type: 'install_token',
        resource_id: id,
        client_ids: [env.client_id],
        details: { environment_id: env.id, client_id: env.client_id, expires_at: expiresAt.toISOString() },
      });
      return { id, token, expires_at: expiresAt.toISOString() };
    },
  };
}
