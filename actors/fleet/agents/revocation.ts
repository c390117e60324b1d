import type { KeyPair } from '@nats-io/jwt';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { DomainError } from '../../../contracts/errors.ts';
import { AgentAccounts } from '../../../platform/broker/agent-accounts.ts';
import { accountOfCreds, seedFromFile } from '../../../platform/broker/issuer.ts';
import { BrokerRevoker } from '../../../platform/broker/revoker.ts';
import { ConfigError, type Config } from '../../../platform/config.ts';
import type { Logger } from '../../../platform/logger.ts';
import { LazyNats } from '../../../platform/nats.ts';
import { sql } from '../../../platform/stores/sql.ts';

/** How long a revocation waits for the system connection when it is not up yet (start-up, a reconnect). */
const CONNECT_WAIT_MS = 3_000;

interface Broker {
  nats: LazyNats;
  account: string;
  signing: KeyPair;
  agentAccounts: AgentAccounts | undefined;
}

/** An agent whose broker credentials are to be revoked. */
export interface RevokedKey {
  id: string;
  public_key: string;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Revokes agents' broker credentials (docs/operations.md → Security model): the agent's public nkey goes into the account JWT's
 * revocation list, so the broker disconnects it at once and refuses it from then on. One per fleet process, over its
 * own system-account connection. Revocations requested while one is being pushed are pushed together next (each
 * push waits for the next whole second), so concurrent deletions cost one account update, not one each.
 *
 * Without SVC_NATS_CREDS the broker authenticates nobody and there is nothing to revoke: revocations are then no-ops
 * (logged once at start).
 */
export class AgentRevoker {
  private queue = new Map<string, string>();
  private waiters: Waiter[] = [];
  private busy = false;

  private readonly broker: Broker | undefined;
  private readonly log: Logger;
  private constructor(broker: Broker | undefined, log: Logger) {
    this.broker = broker;
    this.log = log;
  }

  static async start(config: Config, log: Logger): Promise<AgentRevoker> {
    if (!config.SVC_NATS_CREDS) {
      log.warn(
        'SVC_NATS_CREDS is unset (the broker authenticates nobody): agent revocation only marks the agents revoked',
      );
      return new AgentRevoker(undefined, log);
    }
    const missing = (['SVC_NATS_SYSTEM_CREDS', 'SVC_NATS_OPERATOR_KEY'] as const).filter((k) => !config[k]);
    if (missing.length > 0)
      throw new ConfigError(
        `invalid configuration:\n  ${missing.map((k) => `${k}: is required by the fleet domain to revoke agents`).join('\n  ')}`,
      );
    const account = await accountOfCreds(config.SVC_NATS_CREDS);
    const signing = seedFromFile(config.SVC_NATS_OPERATOR_KEY!);
    const nats = new LazyNats(
      config.SVC_NATS_URL,
      `svc-fleet-revoker-${process.pid}`,
      log,
      config.SVC_NATS_SYSTEM_CREDS,
      config.SVC_NATS_CA,
    );
    const agentAccounts = config.SVC_NATS_ISSUER_KEY
      ? new AgentAccounts(
          async () => nats.current ?? (await within(nats.ready, CONNECT_WAIT_MS)) ?? Promise.reject(unreachable()),
          account,
          signing,
          seedFromFile(config.SVC_NATS_ISSUER_KEY),
        )
      : undefined;
    return new AgentRevoker({ nats, account, signing, agentAccounts }, log);
  }

  /** The per-agent accounts, over this revoker's system connection (undefined when the broker authenticates nobody). */
  get agentAccounts(): AgentAccounts | undefined {
    return this.broker?.agentAccounts;
  }

  /** Resolves once the broker has applied the revocation of every key; `unavailable` when it could not be confirmed. */
  revoke(agents: readonly RevokedKey[]): Promise<void> {
    if (agents.length === 0 || !this.broker) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      for (const a of agents) this.queue.set(a.public_key, a.id);
      this.waiters.push({ resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.size > 0) {
        const keys = [...this.queue].map(([public_key, id]) => ({ id, public_key }));
        const waiters = this.waiters;
        this.queue = new Map();
        this.waiters = [];
        try {
          await this.push(keys);
          for (const w of waiters) w.resolve();
        } catch (err) {
          for (const w of waiters) w.reject(err);
        }
      }
    } finally {
      this.busy = false;
    }
  }

  private async push(keys: RevokedKey[]): Promise<void> {
    const broker = this.broker!;
    const nc = broker.nats.current ?? (await within(broker.nats.ready, CONNECT_WAIT_MS));
    if (!nc)
      throw new DomainError(
        'unavailable',
        'the message broker is unreachable: the agent credentials could not be revoked; nothing was changed, try again',
      );
    try {
      // Agents have accounts of their own; one enrolled before those existed is a user of the service account.
      await Promise.all([
        new BrokerRevoker(nc, broker.account, broker.signing).revoke(keys.map((k) => k.public_key)),
        ...keys.map((k) => broker.agentAccounts?.revoke(k.id, k.public_key)),
      ]);
    } catch (err) {
      this.log.error({ err, keys: keys.length }, 'agent revocation at the broker failed');
      throw new DomainError(
        'unavailable',
        'the message broker did not confirm the revocation of the agent credentials; nothing was changed, try again',
      );
    }
  }

  async close(): Promise<void> {
    await this.broker?.nats.close();
  }
}

const unreachable = (): DomainError =>
  new DomainError('unavailable', 'the message broker is unreachable; nothing was changed, try again');

async function within(p: Promise<NatsConnection>, ms: number): Promise<NatsConnection | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

export interface RevokedAgent {
  id: string;
  client_id: string;
  host_id: string | null;
  public_key: string;
  /** Status before the revocation: `pending` enrolments held no credentials. */
  previous: 'pending' | 'active';
}

/**
 * Revokes, inside the caller's transaction, every agent matching `where` that is not revoked yet: rows marked revoked
 * (locked first, so an enrolment completing meanwhile is either seen active here or finds its agent revoked), their
 * hosts offline, and the keys of those holding live credentials revoked at the broker before the transaction
 * commits. A broker failure throws and so rolls the whole change back: the database never says revoked while the
 * broker still lets the agent in.
 */
export async function revokeAgents(
  tx: EntityManager,
  revoker: AgentRevoker,
  where: { sql: string; params: unknown[] },
): Promise<RevokedAgent[]> {
  const rows = await sql<RevokedAgent & { live: boolean }>(
    tx,
    `WITH target AS (
       SELECT id, status, (credentials_expires_at IS NULL OR credentials_expires_at > now()) AS live
         FROM agents WHERE status <> 'revoked' AND (${where.sql}) FOR UPDATE
     )
     UPDATE agents a SET status = 'revoked', revoked_at = now(), updated_at = now()
       FROM target t WHERE a.id = t.id AND t.status <> 'revoked'
     RETURNING a.id, a.client_id, a.host_id, a.public_key, t.status AS previous, t.live`,
    where.params,
  );
  if (rows.length === 0) return [];
  await sql(
    tx,
    `UPDATE hosts SET agent_status = 'offline', updated_at = now() WHERE agent_id IN (?) AND agent_status <> 'offline'`,
    [rows.map((r) => r.id)],
  );
  await revoker.revoke(rows.filter((r) => r.previous === 'active' && r.live));
  return rows.map(({ live: _live, ...r }) => r);
}
