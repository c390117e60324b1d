import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { fromPublic } from '@nats-io/nkeys';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { requirePermission } from '../../../contracts/access.ts';
import type { Cat } from '../../../contracts/catalogue.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { AuditRecorder } from '../../../platform/audit.ts';
import type { AgentAccounts } from '../../../platform/broker/agent-accounts.ts';
import { BrokerIssuer } from '../../../platform/broker/issuer.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Config } from '../../../platform/config.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { loadEnvironment } from '../scope.ts';

/** How long a challenge may be answered: the agent signs it at once, so minutes are plenty. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
const TOKEN_PREFIX = 'svc_it_';

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

export interface EnrolmentDeps {
  orm: MikroORM;
  audit: AuditRecorder;
  clock: Clock;
  config: Config;
}

/** The broker issuer, built once from the service creds and the account signing key (SVC_NATS_CREDS, SVC_NATS_ISSUER_KEY). */
export async function agentIssuer(
  config: Config,
  agentAccounts: AgentAccounts | undefined,
): Promise<BrokerIssuer | undefined> {
  if (!config.SVC_NATS_CREDS || !config.SVC_NATS_ISSUER_KEY) return undefined;
  return BrokerIssuer.fromFiles(config.SVC_NATS_CREDS, config.SVC_NATS_ISSUER_KEY, agentAccounts);
}

/** Broker URLs agents are told to use: SVC_AGENT_NATS_SERVERS, else the URL the services use. */
export const agentNatsServers = (config: Config): string[] =>
  (config.SVC_AGENT_NATS_SERVERS || config.SVC_NATS_URL)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * The broker's CA handed to enrolling agents (SVC_NATS_CA), read once: the process's own connection already trusts
 * this file, so an unreadable one fails start-up (main.ts) before any enrolment gets here.
 */
export function agentNatsCa(config: Config): () => Promise<string | undefined> {
  let pem: Promise<string | undefined> | undefined;
  return () => (pem ??= config.SVC_NATS_CA ? readFile(config.SVC_NATS_CA, 'utf8') : Promise.resolve(undefined));
}

function decodeBase64Url(value: string): Buffer | undefined {
  const buf = Buffer.from(value, 'base64url');
  // Buffer.from ignores what it cannot decode: a round trip tells a real encoding from garbage.
  return buf.length > 0 && buf.toString('base64url') === value.replace(/=+$/, '') ? buf : undefined;
}

/** True when `signature` is the Ed25519 signature of `challenge` by the nkey `publicKey`. */
export function verifiesChallenge(publicKey: string, challenge: string, signature: string): boolean {
  const sig = decodeBase64Url(signature);
  if (!sig || sig.length !== 64) return false;
  try {
    return fromPublic(publicKey).verify(new TextEncoder().encode(challenge), sig);
  } catch {
    return false;
  }
}

interface TokenRow {
  id: string;
  environment_id: string;
  client_id: string;
  expires_at: Date | string;
  used_at: Date | string | null;
}

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

export function enrolmentHandlers(deps: EnrolmentDeps, issuer: BrokerIssuer | undefined): Handlers<Cat, 'fleet'> {
  const fork = (): EntityManager => deps.orm.em.fork();
  const now = (): Date => new Date(deps.clock.now());
  const natsCa = agentNatsCa(deps.config);

  /**
   * Every refused enrolment step is audited with its reason, then answered 401 with a message that says what failed.
   * `clientId`: the client of the install token or agent named, when there is one (else the entry is global).
   */
  const refuse = async (
    ctx: CallerContext,
    step: string,
    reason: string,
    clientId: string | undefined,
    details: Record<string, unknown>,
  ): Promise<never> => {
    await deps.audit.record(ctx, {
      action: 'agent.enrollment_failed',
      resource_type: 'agent',
      resource_id: (details.agent_id as string | undefined) ?? null,
      client_ids: clientId === undefined ? [] : [clientId],
      details: { step, reason, ...details },
    });
    throw new DomainError('unauthorized', reason);
  };

  const tokenProblem = (row: TokenRow | undefined, at: Date): string | undefined => {
    if (!row) return 'install token is not valid';
    if (row.used_at !== null) return 'install token was already used';
    if (new Date(row.expires_at).getTime() <= at.getTime()) return 'install token has expired';
    return undefined;
  };

  return {
    'svc.fleet.install_tokens.create': async ({ environment_id, expires_in_seconds }, { ctx }) => {
      requirePermission(ctx, 'agents:update');
      const em = fork();
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

    'svc.fleet.enrol.start': async ({ install_token, public_key, hostname, os, arch }, { ctx }) => {
      const em = fork();
      const at = now();
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

    'svc.fleet.enrol.complete': async ({ agent_id, challenge, signature }, { ctx }) => {
      // Before anything is written: a CA that cannot be read must not leave an agent enrolled without its reply.
      const ca = await natsCa();
      const at = now();
      const outcome = await fork().transactional(async (tx) => {
        const [agent] = await sql<PendingAgent>(
          tx,
          `SELECT id, client_id, environment_id, install_token_id, public_key, status, hostname, os, arch, challenge_hash, challenge_expires_at FROM agents WHERE id = ? FOR UPDATE`,
          [agent_id],
        );
        if (!agent) return { refused: 'unknown agent or challenge' } as const;
        const expected = agent.challenge_hash;
        const given = sha256(challenge);
        if (agent.status !== 'pending' || !expected || !timingSafeEqual(expected, given))
          return { refused: 'challenge is not valid or was already used', agent } as const;
        if (agent.challenge_expires_at && new Date(agent.challenge_expires_at).getTime() <= at.getTime())
          return { refused: 'challenge has expired', agent } as const;
        if (!verifiesChallenge(agent.public_key, challenge, signature))
          return { refused: 'signature does not verify against the enrolled public key', agent } as const;
        // Only an agent that proved its challenge learns that the broker credentials cannot be issued (authentication
        // before availability); the rollback leaves its challenge and install token as they were.
        if (!issuer)
          throw new DomainError(
            'unavailable',
            'agent enrolment is not configured (SVC_NATS_CREDS and SVC_NATS_ISSUER_KEY)',
          );
        // The token is consumed by the enrolment that completes, so a failed signature never burns it.
        const [token] = agent.install_token_id
          ? await sql<TokenRow>(
              tx,
              `SELECT id, environment_id, client_id, expires_at, used_at FROM install_tokens WHERE id = ? FOR UPDATE`,
              [agent.install_token_id],
            )
          : [];
        const problem = tokenProblem(token, at);
        if (problem) return { refused: problem, agent } as const;
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
        return { agent, hostId, credentials } as const;
      });
      if ('refused' in outcome) {
        // Also burn a pending challenge that failed: a second try must start over with a new one.
        if (outcome.agent?.status === 'pending')
          await sql(fork(), `UPDATE agents SET challenge_hash = NULL WHERE id = ? AND status = 'pending'`, [agent_id]);
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
