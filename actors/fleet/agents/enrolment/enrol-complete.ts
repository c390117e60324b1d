import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../../../contracts/errors.ts';
import type { BrokerIssuer } from '../../../../platform/broker/issuer.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import { agentNatsCa, agentNatsServers } from './broker-access.ts';
import { verifiesChallenge } from './challenge.ts';
import type { EnrolmentDeps, EnrolmentHandlers } from './deps.ts';
import { sha256, tokenProblem, type TokenRow } from './install-token.ts';
import type { Refuse } from './refusal.ts';

interface PendingAgent {
  id: string;
  client_id: string;
  environment_id: string;
  install_token_id: string | null;
  public_key: string;
  status: 'pending' | 'active' | 'revoked';
  hostname: string;
  os: string;
  arch: string;
  challenge_hash: Buffer | null;
  challenge_expires_at: Date | string | null;
}

type AgentCredentials = Awaited<ReturnType<BrokerIssuer['agent']>>;

/** A refusal (with the agent when it was found), or the enrolled agent, its new host and its broker credentials. */
type Completion =
  | { readonly refused: string; readonly agent?: PendingAgent }
  | { readonly agent: PendingAgent; readonly hostId: string; readonly credentials: AgentCredentials };

interface Answer {
  agent_id: string;
  challenge: string;
  signature: string;
}

/**
 * Checks the answered challenge under the agent's row lock and, when it holds, consumes the install token, creates
 * the host and activates the agent with fresh broker credentials, all in `tx`.
 */
async function completeInTransaction(
  tx: EntityManager,
  deps: EnrolmentDeps,
  issuer: BrokerIssuer | undefined,
  { agent_id, challenge, signature }: Answer,
  at: Date,
): Promise<Completion> {
  const [agent] = await sql<PendingAgent>(
    tx,
    `SELECT id, client_id, environment_id, install_token_id, public_key, status, hostname, os, arch, challenge_hash, challenge_expires_at FROM agents WHERE id = ? FOR UPDATE`,
    [agent_id],
  );
  if (!agent) return { refused: 'unknown agent or challenge' };
  const expected = agent.challenge_hash;
  const given = sha256(challenge);
  if (agent.status !== 'pending' || !expected || !timingSafeEqual(expected, given))
    return { refused: 'challenge is not valid or was already used', agent };
  if (agent.challenge_expires_at && new Date(agent.challenge_expires_at).getTime() <= at.getTime())
    return { refused: 'challenge has expired', agent };
  if (!verifiesChallenge(agent.public_key, challenge, signature))
    return { refused: 'signature does not verify against the enrolled public key', agent };
  // Only an agent that proved its challenge learns that the broker credentials cannot be issued (authentication
  // before availability); the rollback leaves its challenge and install token as they were.
  if (!issuer)
    throw new DomainError('unavailable', 'agent enrolment is not configured (SVC_NATS_CREDS and SVC_NATS_ISSUER_KEY)');
  // The token is consumed by the enrolment that completes, so a failed signature never burns it.
  const [token] = agent.install_token_id
    ? await sql<TokenRow>(
        tx,
        `SELECT id, environment_id, client_id, expires_at, used_at FROM install_tokens WHERE id = ? FOR UPDATE`,
        [agent.install_token_id],
      )
    : [];
  const problem = tokenProblem(token, at);
  if (problem) return { refused: problem, agent };
  const hostId = randomUUID();
  await sql(tx, `UPDATE install_tokens SET used_at = ?, used_by_agent_id = ? WHERE id = ?`, [
    at,
    agent.id,
    agent.install_token_id,
  ]);
  await sql(
    tx,
    `INSERT INTO hosts (id, environment_id, client_id, agent_id, hostname, os, arch) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [hostId, agent.environment_id, agent.client_id, agent.id, agent.hostname, agent.os, agent.arch],
  );
  const credentials = await issuer.agent(
    agent.id,
    agent.public_key,
    deps.config.SVC_AGENT_CREDENTIALS_TTL_SECONDS,
    true,
  );
  await sql(
    tx,
    `UPDATE agents SET status = 'active', host_id = ?, challenge_hash = NULL, challenge_expires_at = NULL, enrolled_at = ?, credentials_expires_at = ?, updated_at = ? WHERE id = ?`,
    [hostId, at, new Date(credentials.expiresAt * 1000), at, agent.id],
  );
  return { agent, hostId, credentials };
}

/**
 * `svc.fleet.enrol.complete`: the agent answers its challenge signed with its key, and gets its host, its broker
 * credentials and where to connect.
 */
export function enrolCompleteHandlers(
  deps: EnrolmentDeps,
  issuer: BrokerIssuer | undefined,
  refuse: Refuse,
): EnrolmentHandlers {
  const natsCa = agentNatsCa(deps.config);
  return {
    'svc.fleet.enrol.complete': async ({ agent_id, challenge, signature }, { ctx }) => {
      // Before anything is written: a CA that cannot be read must not leave an agent enrolled without its reply.
      const ca = await natsCa();
      const at = new Date(deps.clock.now());
      const outcome = await deps.orm.em
        .fork()
        .transactional((tx) => completeInTransaction(tx, deps, issuer, { agent_id, challenge, signature }, at));
      if ('refused' in outcome) {
        // Also burn a pending challenge that failed: a second try must start over with a new one.
        if (outcome.agent?.status === 'pending')
          await sql(deps.orm.em.fork(), `UPDATE agents SET challenge_hash = NULL WHERE id = ? AND status = 'pending'`, [
            agent_id,
          ]);
        return refuse(ctx, 'complete', outcome.refused ?? 'enrolment refused', outcome.agent?.client_id, { agent_id });
      }
      const { agent, hostId, credentials } = outcome;
      await deps.audit.record(ctx, {
        action: 'agent.enrolled',
        resource_type: 'agent',
        resource_id: agent.id,
        client_ids: [agent.client_id],
        details: {
          host_id: hostId,
          environment_id: agent.environment_id,
          client_id: agent.client_id,
          hostname: agent.hostname,
          public_key: agent.public_key,
        },
      });
      return {
        agent_id: agent.id,
        host_id: hostId,
        nats_servers: agentNatsServers(deps.config),
        user_jwt: credentials.jwt,
        inbox_prefix: credentials.inboxPrefix,
        ...(ca ? { nats_ca: ca } : {}),
      };
    },
  };
}
