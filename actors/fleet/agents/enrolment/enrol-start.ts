import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from '../../../../platform/stores/sql.ts';
import { CHALLENGE_TTL_MS } from './challenge.ts';
import type { EnrolmentDeps, EnrolmentHandlers } from './deps.ts';
import { sha256, tokenProblem, type TokenRow } from './install-token.ts';
import type { Refuse } from './refusal.ts';

/**
 * `svc.fleet.enrol.start`: an agent presents an install token and its public key, and is recorded pending with a
 * challenge to sign. The token is not consumed here: only the enrolment that completes uses it.
 */
export function enrolStartHandlers(deps: EnrolmentDeps, refuse: Refuse): EnrolmentHandlers {
  return {
    'svc.fleet.enrol.start': async ({ install_token, public_key, hostname, os, arch }, { ctx }) => {
      const em = deps.orm.em.fork();
      const at = new Date(deps.clock.now());
      const [row] = await sql<TokenRow>(
        em,
        `SELECT id, environment_id, client_id, expires_at, used_at FROM install_tokens WHERE token_hash = ?`,
        [sha256(install_token)],
      );
      const problem = tokenProblem(row, at);
      if (problem || !row)
        return refuse(ctx, 'enroll', problem ?? 'install token is not valid', row?.client_id, {
          hostname,
          public_key,
          install_token_id: row?.id ?? null,
        });
      const agentId = randomUUID();
      const challenge = randomBytes(32).toString('base64url');
      await sql(
        em,
        `INSERT INTO agents (id, client_id, environment_id, install_token_id, public_key, status, hostname, os, arch, challenge_hash, challenge_expires_at)
         VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)`,
        [
          agentId,
          row.client_id,
          row.environment_id,
          row.id,
          public_key,
          hostname,
          os,
          arch,
          sha256(challenge),
          new Date(at.getTime() + CHALLENGE_TTL_MS),
        ],
      );
      return { agent_id: agentId, challenge };
    },
  };
}
