import { decode, encodeAccount, fromSeed, type Account, type Export, type Import, type KeyPair } from '@nats-io/jwt';
import { Prefix } from '@nats-io/nkeys';
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { createHmac } from 'node:crypto';
import {
  AGENT_COMMANDS_PREFIX,
  AGENT_CONFIG_PREFIX,
  agentCommandSubject,
  agentConfigSubject,
} from '../../contracts/domains/agent-telemetry.ts';
import { BrokerRevoker } from './revoker.ts';
import { AGENT_ID } from './permissions.ts';

/**
 * What the service account exports to agent accounts. Across an import the server rewrites the reply subject to a
 * `_R_.…` subject of its own that leads back into the importing account only: an answer or a JetStream
 * acknowledgement to whatever reply subject an agent chose lands in that agent's own account, where nothing else
 * listens and JetStream is off.
 */
export const SERVICE_EXPORTS: Export[] = [
  { name: 'agent-telemetry', subject: 'svc.agent.*.>', type: 'service', response_type: 'Singleton' },
  { name: 'agent-config', subject: `${AGENT_CONFIG_PREFIX}.*`, type: 'service', response_type: 'Singleton' },
  { name: 'agent-commands', subject: `${AGENT_COMMANDS_PREFIX}.*`, type: 'stream' },
  // Tools: discovery is answered by every service (`Stream`: many answers per request), events are only read.
  { name: 'discovery', subject: '$SRV.>', type: 'service', response_type: 'Stream' },
  { name: 'events', subject: 'svc.evt.>', type: 'stream' },
];

/** The tools' account: every tool's user lives there, importing discovery and events and nothing else. */
export const toolImports = (serviceAccount: string): Import[] => [
  { name: 'discovery', subject: '$SRV.>', account: serviceAccount, type: 'service' },
  { name: 'events', subject: 'svc.evt.>', account: serviceAccount, type: 'stream' },
];

const TOOLS_LIMITS = {
  subs: -1,
  conn: -1,
  leaf: 0,
  data: -1,
  payload: -1,
  imports: 2,
  exports: 0,
  wildcards: true,
} as const;

/** An account's own connection and subscription limits: one agent, a few connections (restarts overlap). */
const AGENT_LIMITS = {
  subs: 1000,
  conn: 8,
  leaf: 0,
  data: -1,
  payload: -1,
  imports: 3,
  exports: 0,
  wildcards: true,
} as const;

/** The imports that make an agent's own subjects, and only those, reach the service account. */
export const agentImports = (agentId: string, serviceAccount: string): Import[] => [
  { name: 'telemetry', subject: `svc.agent.${agentId}.>`, account: serviceAccount, type: 'service' },
  { name: 'config', subject: agentConfigSubject(agentId), account: serviceAccount, type: 'service' },
  { name: 'commands', subject: agentCommandSubject(agentId), account: serviceAccount, type: 'stream' },
];

/** Replies and acknowledgements that came through an import carry the server's response subject. */
export const IMPORT_REPLY_PREFIX = '_R_.';

interface ClaimsReply {
  data?: { code?: number; message?: string };
  error?: { code?: number; description?: string };
}

const sameExports = (have: readonly Export[] | undefined): boolean =>
  SERVICE_EXPORTS.every((want) =>
    (have ?? []).some((e) => e.subject === want.subject && e.type === want.type && !e.token_req),
  );

/**
 * One NATS account per agent: the agent's user lives there, its subjects cross into the service account through
 * imports of its own id alone. The account key is derived from the issuer's seed and the agent id (HMAC-SHA256), so
 * nothing is stored per agent and the same account is found again for renewals and revocations. Account JWTs are
 * signed by the operator's signing key and pushed to the broker's full resolver through the system account.
 */
export class AgentAccounts {
  /** Accounts this process has pushed or seen on the server: a renewal does not push them again. */
  private readonly known = new Set<string>();
  private readonly system: () => Promise<NatsConnection>;
  readonly serviceAccount: string;
  private readonly operatorSigning: KeyPair;
  private readonly derivation: Uint8Array;
  private readonly timeoutMs: number;
  constructor(
    system: () => Promise<NatsConnection>,
    serviceAccount: string,
    operatorSigning: KeyPair,
    /** The seed the account keys are derived from (the issuer's signing seed). */
    derivationSeed: KeyPair,
    timeoutMs = 5_000,
  ) {
    this.system = system;
    this.serviceAccount = serviceAccount;
    this.operatorSigning = operatorSigning;
    this.derivation = derivationSeed.getSeed();
    this.timeoutMs = timeoutMs;
  }

  /** The agent account's key pair (its seed signs the agent's user JWTs). */
  keyOf(agentId: string): KeyPair {
    if (!AGENT_ID.test(agentId)) throw new Error('agent id must be 1-64 letters, digits, _ or -');
    const raw = createHmac('sha256', this.derivation).update(`svc-agent-account:${agentId}`).digest();
    return fromSeed(Codec.encodeSeed(Prefix.Account, new Uint8Array(raw)));
  }

  accountOf(agentId: string): string {
    return this.keyOf(agentId).getPublicKey();
  }

  /**
   * Makes sure the agent's account is on the broker. A new enrolment (`fresh`) pushes it; otherwise an account the
   * server already holds is left as it is, since pushing it again would drop a revocation written meanwhile.
   */
  async ensure(agentId: string, fresh: boolean): Promise<string> {
    const account = this.accountOf(agentId);
    if (this.known.has(account)) return account;
    if (!fresh && (await this.lookup(account))) {
      this.known.add(account);
      return account;
    }
    const claims: Partial<Account> = { imports: agentImports(agentId, this.serviceAccount), limits: AGENT_LIMITS };
    const jwt = await encodeAccount(`agent-${agentId}`, this.keyOf(agentId), claims, { signer: this.operatorSigning });
    await this.push('$SYS.REQ.CLAIMS.UPDATE', jwt);
    this.known.add(account);
    return account;
  }

  /**
   * Revokes the agent's user in its own account (an agent enrolled before agent accounts has none: nothing to do
   * there). Resolves once the server has applied it.
   */
  async revoke(agentId: string, publicKey: string): Promise<void> {
    const account = this.accountOf(agentId);
    if (!this.known.has(account) && !(await this.lookup(account))) return;
    await new BrokerRevoker(await this.system(), account, this.operatorSigning, this.timeoutMs).revoke([publicKey]);
  }

  /** The tools' account key pair (derived like an agent's, from a name no agent id can take). */
  toolsKey(): KeyPair {
    const raw = createHmac('sha256', this.derivation).update('svc-tools-account').digest();
    return fromSeed(Codec.encodeSeed(Prefix.Account, new Uint8Array(raw)));
  }

  /**
   * Makes sure the tools' account is on the broker with today's imports. An account already there with them is left
   * as it is; one with other imports is re-signed keeping its revocations.
   */
  async ensureTools(): Promise<string> {
    const key = this.toolsKey();
    const account = key.getPublicKey();
    if (this.known.has(account)) return account;
    const current = await this.lookup(account);
    const claims = current ? decode<Account>(current).nats : undefined;
    const imports = toolImports(this.serviceAccount);
    const same =
      claims?.imports?.length === imports.length &&
      imports.every((want) =>
        claims.imports!.some((i) => i.subject === want.subject && i.type === want.type && i.account === want.account),
      );
    if (!same) {
      if (current) await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
      const next = { ...(claims ?? {}), imports, limits: TOOLS_LIMITS };
      await this.push(
        '$SYS.REQ.CLAIMS.UPDATE',
        await encodeAccount('tools', key, next, { signer: this.operatorSigning }),
      );
    }
    this.known.add(account);
    return account;
  }

  /** Revokes tool users in the tools' account (nothing to do when it was never made). */
  async revokeTools(publicKeys: string[]): Promise<void> {
    const account = this.toolsKey().getPublicKey();
    if (!this.known.has(account) && !(await this.lookup(account))) return;
    await new BrokerRevoker(await this.system(), account, this.operatorSigning, this.timeoutMs).revoke(publicKeys);
  }

  /** Adds the agents' and tools' exports to the service account's JWT when they are missing, keeping everything else it says. */
  async ensureServiceExports(): Promise<void> {
    const jwt = await this.lookup(this.serviceAccount);
    if (!jwt) throw new Error('the broker does not know the service account');
    const current = decode<Account>(jwt);
    if (sameExports(current.nats.exports)) return;
    const wanted = new Set(SERVICE_EXPORTS.map((e) => e.subject));
    const exports = [...(current.nats.exports ?? []).filter((e) => !wanted.has(e.subject)), ...SERVICE_EXPORTS];
    // A revocation written within this second would carry the same `iat`: start the update in the next one.
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
    const next = await encodeAccount(
      current.name,
      this.serviceAccount,
      { ...current.nats, exports },
      { signer: this.operatorSigning },
    );
    await this.push(`$SYS.REQ.ACCOUNT.${this.serviceAccount}.CLAIMS.UPDATE`, next);
  }

  /** The account's JWT as the server holds it, or undefined when no server answers for it. */
  private async lookup(account: string): Promise<string | undefined> {
    const nc = await this.system();
    try {
      const msg = await nc.request(`$SYS.REQ.ACCOUNT.${account}.CLAIMS.LOOKUP`, '', {
        timeout: Math.min(this.timeoutMs, 1_500),
      });
      const jwt = msg.string();
      return jwt.length > 0 ? jwt : undefined;
    } catch {
      return undefined;
    }
  }

  private async push(subject: string, jwt: string): Promise<void> {
    const nc = await this.system();
    const reply = JSON.parse((await nc.request(subject, jwt, { timeout: this.timeoutMs })).string()) as ClaimsReply;
    if (reply.error || (reply.data?.code !== undefined && reply.data.code >= 300))
      throw new Error(`account update refused: ${reply.error?.description ?? reply.data?.message ?? 'unknown error'}`);
  }
}
