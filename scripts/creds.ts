/**
 * `npm run creds -- <command>`: issues and revokes NATS credentials (docs/operations.md → Security model). Reads the
 * same variables as the services (SVC_NATS_URL, SVC_NATS_CREDS, SVC_NATS_ISSUER_KEY, SVC_NATS_CA, and for tools and
 * revocation SVC_NATS_OPERATOR_KEY and SVC_NATS_SYSTEM_CREDS, since tools live in an account of their own);
 * `npm run creds` fills them with the local defaults.
 *
 *   tool    --name <name> --out <file> [--expires-in <duration, e.g. 90d, 12h, 0 = never>]   read-only observer
 *   service --name <name> --out <file> [--expires-in <duration>]                            another gateway/actor process
 *   revoke  <user public key U…> [...]                                                      disconnects and refuses them
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { NatsConnection } from '@nats-io/transport-node';
import { AgentAccounts } from '../platform/broker/agent-accounts.ts';
import { BrokerIssuer, seedFromFile, accountOfCreds } from '../platform/broker/issuer.ts';
import { BrokerRevoker } from '../platform/broker/revoker.ts';
import { TOOL_NAME } from '../platform/broker/permissions.ts';
import { connectNats, closeNats } from '../platform/nats.ts';
import { createLogger } from '../platform/logger.ts';

const USAGE = `usage: npm run creds -- tool|service --name <name> --out <file> [--expires-in 90d]
       npm run creds -- revoke <user public key> [...]`;

class UsageError extends Error {}

function need(name: string): string {
  const v = process.env[name];
  if (!v)
    throw new UsageError(`${name} is not set (npm run creds sets the local defaults; elsewhere point it at the file)`);
  return v;
}

/** `90d`, `12h`, `30m`, `3600` (seconds) or `0` (never) → seconds. */
function parseDuration(text: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!m) throw new UsageError(`--expires-in: "${text}" is not a duration such as 90d, 12h, 30m or 3600`);
  return Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { name: { type: 'string' }, out: { type: 'string' }, 'expires-in': { type: 'string', default: '90d' } },
  });
  if (command === 'tool' || command === 'service') {
    if (!values.name || !TOOL_NAME.test(values.name))
      throw new UsageError('--name is required: 1-64 letters, digits, _ or -');
    if (!values.out) throw new UsageError('--out <file> is required');
    const ttl = parseDuration(values['expires-in']);
    const issued =
      command === 'tool'
        ? await withAccounts((accounts) =>
            BrokerIssuer.fromFiles(need('SVC_NATS_CREDS'), need('SVC_NATS_ISSUER_KEY'), accounts).then((issuer) =>
              issuer.tool(values.name!, ttl),
            ),
          )
        : await (
            await BrokerIssuer.fromFiles(need('SVC_NATS_CREDS'), need('SVC_NATS_ISSUER_KEY'))
          ).service(values.name, ttl);
    writeFileSync(values.out, issued.creds, { mode: 0o600 });
    const expires = issued.expiresAt ? new Date(issued.expiresAt * 1000).toISOString() : 'never';
    process.stdout.write(
      `wrote ${values.out}: ${command} "${values.name}", user ${issued.publicKey}, expires ${expires}\n`,
    );
    if ('inboxPrefix' in issued)
      process.stdout.write(
        `connect with inbox prefix ${issued.inboxPrefix} (nats CLI: --inbox-prefix ${issued.inboxPrefix})\n`,
      );
    return;
  }
  if (command === 'revoke') {
    if (positionals.length === 0 || positionals.some((k) => !/^U[A-Z2-7]{55}$/.test(k)))
      throw new UsageError('revoke takes one or more user public keys (U…, 56 characters)');
    // A key is a service user, an admin user or a tool: revoked in the service account and in the tools' account.
    await withAccounts(async (accounts, system) => {
      await new BrokerRevoker(system, accounts.serviceAccount, seedFromFile(need('SVC_NATS_OPERATOR_KEY'))).revoke(
        positionals,
      );
      await accounts.revokeTools(positionals);
    });
    process.stdout.write(`revoked ${positionals.join(', ')}: disconnected and refused from now on\n`);
    return;
  }
  throw new UsageError(USAGE);
}

/** Runs `work` with the broker's accounts over a system-account connection, closed afterwards. */
async function withAccounts<T>(work: (accounts: AgentAccounts, system: NatsConnection) => Promise<T>): Promise<T> {
  const log = createLogger('warn');
  const system = await connectNats(
    process.env.SVC_NATS_URL ?? 'nats://127.0.0.1:4223',
    'creds',
    log,
    need('SVC_NATS_SYSTEM_CREDS'),
    process.env.SVC_NATS_CA || undefined,
  );
  try {
    const accounts = new AgentAccounts(
      () => Promise.resolve(system),
      await accountOfCreds(need('SVC_NATS_CREDS')),
      seedFromFile(need('SVC_NATS_OPERATOR_KEY')),
      seedFromFile(need('SVC_NATS_ISSUER_KEY')),
    );
    await accounts.ensureServiceExports();
    return await work(accounts, system);
  } finally {
    await closeNats(system, log);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
