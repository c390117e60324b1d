import { decode, encodeAccount, type Account, type KeyPair } from '@nats-io/jwt';
import type { NatsConnection } from '@nats-io/transport-node';

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

interface ClaimsReply {
  data?: { code?: number; message?: string };
  error?: { code?: number; description?: string };
}

/**
 * Revokes users of the application account: the account JWT (signed by an operator signing key) gets the user's
 * public key in its revocation list and is pushed to the server through the system account, which disconnects the
 * user at once and refuses it from then on (the full resolver keeps the update across restarts). The current JWT is
 * read back from the server first and the result checked afterwards, so concurrent revokers do not drop each other's
 * entries: an update that lost a race is redone.
 */
export class BrokerRevoker {
  private readonly system: NatsConnection;
  private readonly account: string;
  private readonly operatorSigning: KeyPair;
  private readonly timeoutMs: number;
  constructor(system: NatsConnection, account: string, operatorSigning: KeyPair, timeoutMs = 5_000) {
    this.system = system;
    this.account = account;
    this.operatorSigning = operatorSigning;
    this.timeoutMs = timeoutMs;
  }

  private async current(): Promise<{ name: string; claims: Partial<Account> }> {
    const msg = await this.system.request(`$SYS.REQ.ACCOUNT.${this.account}.CLAIMS.LOOKUP`, '', {
      timeout: this.timeoutMs,
    });
    const jwt = msg.string();
    const claims = decode<Account>(jwt);
    if (claims.sub !== this.account) throw new Error('account lookup answered another account');
    return { name: claims.name, claims: claims.nats };
  }

  async revoked(publicKey: string): Promise<number | undefined> {
    return (await this.current()).claims.revocations?.[publicKey];
  }

  /** Revokes every JWT of these users issued up to now; resolves once the server has applied it. */
  async revoke(publicKeys: string[], attempts = 5): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const { name, claims } = await this.current();
      // JWT times are whole seconds and `iat` decides which JWT is newer: wait for the next second when needed.
      const at = nowSeconds();
      const revocations = { ...(claims.revocations ?? {}) };
      for (const key of publicKeys) revocations[key] = Math.max(revocations[key] ?? 0, at);
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
      const jwt = await encodeAccount(name, this.account, { ...claims, revocations }, { signer: this.operatorSigning });
      const reply = JSON.parse(
        (
          await this.system.request(`$SYS.REQ.ACCOUNT.${this.account}.CLAIMS.UPDATE`, jwt, { timeout: this.timeoutMs })
        ).string(),
      ) as ClaimsReply;
      if (reply.error) throw new Error(`account update refused: ${reply.error.description ?? 'unknown error'}`);
      const after = (await this.current()).claims.revocations ?? {};
      if (publicKeys.every((k) => (after[k] ?? 0) >= at)) return;
      if (attempt >= attempts) throw new Error('account update was overwritten by a concurrent update; giving up');
    }
  }
}
