import { readFile } from 'node:fs/promises';
import type { AgentAccounts } from '../../../../platform/broker/agent-accounts.ts';
import { BrokerIssuer } from '../../../../platform/broker/issuer.ts';
import type { Config } from '../../../../platform/config.ts';

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
