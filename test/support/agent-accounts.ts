import { AgentAccounts } from '../../platform/broker/agent-accounts.ts';
import { BrokerIssuer, accountOfCreds, seedFromFile } from '../../platform/broker/issuer.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { NATS_CA, NATS_CREDS, NATS_FILES, NATS_URL } from './env.ts';

/**
 * Issues an agent's credentials as the enrolment does: in the agent's own account, pushed to the broker over a
 * system-account connection of its own that is closed again before this resolves.
 */
export async function issueAgentCredentials(
  agentId: string,
  publicKey: string,
  ttlSeconds = 3600,
): Promise<{ jwt: string; inboxPrefix: string; expiresAt: number; account: string }> {
  const system = await connectNats(
    NATS_URL,
    'test-agent-accounts',
    createLogger('silent'),
    NATS_FILES.systemCreds,
    NATS_CA,
  );
  try {
    const accounts = new AgentAccounts(
      () => Promise.resolve(system),
      await accountOfCreds(NATS_CREDS),
      seedFromFile(NATS_FILES.operatorKey),
      seedFromFile(NATS_FILES.issuerKey),
    );
    await accounts.ensureServiceExports();
    const issuer = await BrokerIssuer.fromFiles(NATS_CREDS, NATS_FILES.issuerKey, accounts);
    const issued = await issuer.agent(agentId, publicKey, ttlSeconds, true);
    return { ...issued, account: accounts.accountOf(agentId) };
  } finally {
    await system.close();
  }
}
