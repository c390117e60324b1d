import {
  encodeUser,
  fmtCreds,
  fromPublic,
  fromSeed,
  parseCreds,
  createUser,
  type KeyPair,
  type Permissions,
} from '@nats-io/jwt';
import { readFileSync } from 'node:fs';
import type { AgentAccounts } from './agent-accounts.ts';
import {
  agentInboxPrefix,
  agentPermissions,
  servicePermissions,
  toolInboxPrefix,
  toolPermissions,
} from './permissions.ts';

/** A seed read from a file (`SU…`, `SA…`, `SO…`), trimmed. */
export function seedFromFile(path: string): KeyPair {
  const text = readFileSync(path, 'utf8').trim();
  try {
    return fromSeed(new TextEncoder().encode(text));
  } catch {
    throw new Error(`${path} does not hold an nkey seed`);
  }
}

/** The account a creds file's user belongs to (the signing key's account, or the direct issuer). */
export async function accountOfCreds(path: string): Promise<string> {
  const { uc } = await parseCreds(readFileSync(path));
  return uc.nats.issuer_account ?? uc.iss;
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/**
 * Issues NATS users of the application account, signed by the account's signing key: agents (from the public nkey
 * they generated themselves, so their seed never leaves the host), tools and extra service processes (a new key
 * pair, handed over as a standard creds file).
 */
export class BrokerIssuer {
  readonly account: string;
  private readonly signing: KeyPair;
  /** With it, each agent gets an account of its own (agent-accounts.ts); without, agents are users of the service account. */
  readonly agentAccounts: AgentAccounts | undefined;
  constructor(account: string, signing: KeyPair, agentAccounts?: AgentAccounts) {
    this.account = account;
    this.signing = signing;
    this.agentAccounts = agentAccounts;
    if (!account.startsWith('A')) throw new Error('account must be an account public key (A…)');
  }

  static async fromFiles(
    serviceCredsPath: string,
    signingSeedPath: string,
    agentAccounts?: AgentAccounts,
  ): Promise<BrokerIssuer> {
    return new BrokerIssuer(await accountOfCreds(serviceCredsPath), seedFromFile(signingSeedPath), agentAccounts);
  }

  /**
   * An agent's user JWT for the public nkey it presented (`U…`), expiring after `ttlSeconds`: in the agent's own
   * account when agent accounts are configured (`fresh` for a new enrolment, whose account is pushed unconditionally).
   */
  async agent(
    agentId: string,
    publicKey: string,
    ttlSeconds: number,
    fresh = false,
  ): Promise<{ jwt: string; inboxPrefix: string; expiresAt: number }> {
    let user: KeyPair;
    try {
      user = fromPublic(publicKey);
    } catch {
      throw new Error('public key is not an nkey');
    }
    if (!publicKey.startsWith('U')) throw new Error('public key must be a user nkey (U…)');
    const expiresAt = nowSeconds() + ttlSeconds;
    if (this.agentAccounts) {
      const account = await this.agentAccounts.ensure(agentId, fresh);
      const jwt = await encodeUser(`agent-${agentId}`, user, account, agentPermissions(agentId), {
        signer: this.agentAccounts.keyOf(agentId),
        exp: expiresAt,
      });
      return { jwt, inboxPrefix: agentInboxPrefix(agentId), expiresAt };
    }
    const jwt = await encodeUser(`agent-${agentId}`, user, this.account, agentPermissions(agentId), {
      signer: this.signing,
      exp: expiresAt,
    });
    return { jwt, inboxPrefix: agentInboxPrefix(agentId), expiresAt };
  }

  /**
   * A read-only observer's creds (events and discovery); `ttlSeconds` 0 means no expiry. With agent accounts
   * configured the user lives in the tools' account, so a reply subject it chooses for a `$SRV` request (answered by
   * every service) leads back into that account and nowhere else.
   */
  async tool(
    name: string,
    ttlSeconds: number,
  ): Promise<{ creds: Uint8Array; publicKey: string; inboxPrefix: string; expiresAt?: number }> {
    const accounts = this.agentAccounts;
    const issued = accounts
      ? await newUser(
          `tool-${name}`,
          await accounts.ensureTools(),
          accounts.toolsKey(),
          toolPermissions(name),
          ttlSeconds,
        )
      : await this.newUser(`tool-${name}`, toolPermissions(name), ttlSeconds);
    return { ...issued, inboxPrefix: toolInboxPrefix(name) };
  }

  /** Creds for another gateway or actor process. */
  service(name: string, ttlSeconds = 0): Promise<{ creds: Uint8Array; publicKey: string; expiresAt?: number }> {
    return this.newUser(`service-${name}`, servicePermissions(), ttlSeconds);
  }

  private newUser(
    name: string,
    perms: Permissions,
    ttlSeconds: number,
  ): Promise<{ creds: Uint8Array; publicKey: string; expiresAt?: number }> {
    return newUser(name, this.account, this.signing, perms, ttlSeconds);
  }
}

/** A new user of `account` signed by `signing`, as a standard creds file; `ttlSeconds` 0 means no expiry. */
async function newUser(
  name: string,
  account: string,
  signing: KeyPair,
  perms: Permissions,
  ttlSeconds: number,
): Promise<{ creds: Uint8Array; publicKey: string; expiresAt?: number }> {
  const user = createUser();
  const expiresAt = ttlSeconds > 0 ? nowSeconds() + ttlSeconds : undefined;
  const jwt = await encodeUser(name, user, account, perms, {
    signer: signing,
    ...(expiresAt ? { exp: expiresAt } : {}),
  });
  return { creds: fmtCreds(jwt, user), publicKey: user.getPublicKey(), ...(expiresAt ? { expiresAt } : {}) };
}
