import {
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  fromSeed,
  type Account,
  type KeyPair,
  type Permissions,
} from '@nats-io/jwt';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BrokerTlsFiles } from './certificates.ts';
import { SERVICE_EXPORTS } from './agent-accounts.ts';
import { adminPermissions, servicePermissions, systemPermissions } from './permissions.ts';

/**
 * The broker's trust chain in nats-server's decentralized JWT model, for a local or single-site installation:
 * an operator (with a separate signing key, which signs the account JWTs and later their updates), the system
 * account (server events, account updates) and one application account `SVC` (JetStream on) whose users are signed
 * by an account signing key, and which exports agents' subjects to their own accounts (agent-accounts.ts). Generated once into a directory (mode 700, files 600) and reused: regenerating would
 * lock out every issued credential, and re-signing the account JWT would drop its revocations.
 */
export const TRUST_FILES = {
  operatorSeed: 'operator.nk',
  operatorSigningSeed: 'operator-signing.nk',
  operatorJwt: 'operator.jwt',
  systemAccountSeed: 'system-account.nk',
  systemAccountJwt: 'system-account.jwt',
  accountSeed: 'account.nk',
  accountSigningSeed: 'account-signing.nk',
  accountJwt: 'account.jwt',
  serviceCreds: 'service.creds',
  adminCreds: 'admin.creds',
  systemCreds: 'system.creds',
  serverConfig: 'nats-server.conf',
} as const;

/** Every NATS limit open: the system's own account, bounded by the server's resources rather than by quotas. */
const OPEN_LIMITS = {
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
  conn: -1,
  leaf: -1,
} as const;
const JETSTREAM_ON = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 } as const;

export interface TrustSummary {
  operator: string;
  systemAccount: string;
  account: string;
  created: boolean;
}

const seedOf = (kp: KeyPair): string => new TextDecoder().decode(kp.getSeed());

async function writeSecret(path: string, content: string | Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode: 0o600 });
  await rename(tmp, path);
}

async function readSeed(dir: string, file: string): Promise<KeyPair> {
  return fromSeed(new TextEncoder().encode((await readFile(join(dir, file), 'utf8')).trim()));
}

/** A standard NATS creds file for a new user of `account`, signed by the account's signing key. */
export async function newUserCreds(
  name: string,
  account: string,
  signing: KeyPair,
  perms: Parameters<typeof encodeUser>[3],
  expiresAt?: number,
): Promise<{ creds: Uint8Array; publicKey: string }> {
  const user = createUser();
  const jwt = await encodeUser(name, user, account, perms, {
    signer: signing,
    ...(expiresAt ? { exp: expiresAt } : {}),
  });
  return { creds: fmtCreds(jwt, user), publicKey: user.getPublicKey() };
}

/**
 * Creates the trust chain in `dir` when it is missing (or completes what is missing of it, never replacing a key),
 * then writes the server configuration from the stored JWTs.
 */
export async function ensureTrust(dir: string, opts: { tls?: BrokerTlsFiles } = {}): Promise<TrustSummary> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const has = (f: string): boolean => existsSync(join(dir, f));
  const created = !has(TRUST_FILES.operatorJwt) || !has(TRUST_FILES.accountJwt) || !has(TRUST_FILES.systemAccountJwt);
  if (created) {
    // A partial directory (an interrupted first run) is started over: nothing has been issued from it yet.
    const operator = createOperator();
    const operatorSigning = createOperator();
    const system = createAccount();
    const account = createAccount();
    const accountSigning = createAccount();
    const systemUser = createUser();
    const systemJwt = await encodeAccount('SYS', system, { limits: OPEN_LIMITS }, { signer: operatorSigning });
    const accountClaims: Partial<Account> = {
      limits: { ...OPEN_LIMITS, ...JETSTREAM_ON },
      signing_keys: [accountSigning.getPublicKey()],
      exports: SERVICE_EXPORTS,
    };
    const accountJwt = await encodeAccount('SVC', account, accountClaims, { signer: operatorSigning });
    const operatorJwt = await encodeOperator('svc-operator', operator, {
      system_account: system.getPublicKey(),
      signing_keys: [operatorSigning.getPublicKey()],
    });
    const sysUserJwt = await encodeUser('system', systemUser, system, systemPermissions());
    const service = await newUserCreds('service', account.getPublicKey(), accountSigning, servicePermissions());
    await writeSecret(join(dir, TRUST_FILES.operatorSeed), seedOf(operator));
    await writeSecret(join(dir, TRUST_FILES.operatorSigningSeed), seedOf(operatorSigning));
    await writeSecret(join(dir, TRUST_FILES.systemAccountSeed), seedOf(system));
    await writeSecret(join(dir, TRUST_FILES.accountSeed), seedOf(account));
    await writeSecret(join(dir, TRUST_FILES.accountSigningSeed), seedOf(accountSigning));
    await writeSecret(join(dir, TRUST_FILES.systemCreds), fmtCreds(sysUserJwt, systemUser));
    await writeSecret(join(dir, TRUST_FILES.serviceCreds), service.creds);
    // JWTs last: their presence marks a complete chain.
    await writeSecret(join(dir, TRUST_FILES.systemAccountJwt), systemJwt);
    await writeSecret(join(dir, TRUST_FILES.accountJwt), accountJwt);
    await writeSecret(join(dir, TRUST_FILES.operatorJwt), operatorJwt);
  }
  const operatorJwt = (await readFile(join(dir, TRUST_FILES.operatorJwt), 'utf8')).trim();
  const systemJwt = (await readFile(join(dir, TRUST_FILES.systemAccountJwt), 'utf8')).trim();
  const accountJwt = (await readFile(join(dir, TRUST_FILES.accountJwt), 'utf8')).trim();
  const operator = await readSeed(dir, TRUST_FILES.operatorSeed).catch(() => undefined);
  const systemAccount = subjectOf(systemJwt);
  const account = subjectOf(accountJwt);
  // Service credentials issued by an earlier build whose permissions differ (say, with response permissions) are
  // replaced by a new user with today's; the old user stays valid until its holders restart with the new file.
  // The admin credentials are made the same way, for a directory that predates them too.
  for (const [file, name, perms] of [
    [TRUST_FILES.serviceCreds, 'service', servicePermissions()],
    [TRUST_FILES.adminCreds, 'admin', adminPermissions()],
  ] as const) {
    const path = join(dir, file);
    const issued = /-----BEGIN NATS USER JWT-----\s+(\S+)\s+/.exec(await readFile(path, 'utf8').catch(() => ''))?.[1];
    if (issued && samePermissions(permissionsOf(issued), perms)) continue;
    const renewed = await newUserCreds(name, account, await readSeed(dir, TRUST_FILES.accountSigningSeed), perms);
    await writeSecret(path, renewed.creds);
  }
  await writeSecret(
    join(dir, TRUST_FILES.serverConfig),
    serverConfig({
      operatorJwt,
      systemAccount,
      preload: { [systemAccount]: systemJwt, [account]: accountJwt },
      ...(opts.tls ? { tls: opts.tls } : {}),
    }),
  );
  return { operator: operator?.getPublicKey() ?? subjectOf(operatorJwt), systemAccount, account, created };
}

function claimsOf(jwt: string): { sub?: unknown; nats?: Permissions } {
  const payload = jwt.split('.')[1];
  if (!payload) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown; nats?: Permissions };
}

/** The `sub` claim of a NATS JWT (no verification: these are our own files). */
export function subjectOf(jwt: string): string {
  const { sub } = claimsOf(jwt);
  if (typeof sub !== 'string') throw new Error('JWT without sub');
  return sub;
}

/** The publish, subscribe and response permissions a user JWT carries. */
export const permissionsOf = (jwt: string): Permissions => {
  const { pub, sub, resp } = claimsOf(jwt).nats ?? {};
  return { ...(pub ? { pub } : {}), ...(sub ? { sub } : {}), ...(resp ? { resp } : {}) };
};

const canonical = (p: Permissions): string =>
  JSON.stringify({
    pub: [...(p.pub?.allow ?? [])].sort(),
    pubDeny: [...(p.pub?.deny ?? [])].sort(),
    sub: [...(p.sub?.allow ?? [])].sort(),
    subDeny: [...(p.sub?.deny ?? [])].sort(),
    resp: p.resp ?? null,
  });

export const samePermissions = (a: Permissions, b: Permissions): boolean => canonical(a) === canonical(b);

/**
 * nats-server configuration: operator mode with the full account resolver (account JWTs and their updates kept on
 * disk, so a revocation survives a restart; the preloads only seed an empty directory, a newer stored JWT wins).
 * Paths are relative: the server runs with this directory as its working directory (locally and in docker-compose),
 * and the listen address comes from the command line. With `tls`, the client port speaks only TLS (nats-server then
 * refuses a client that does not upgrade); its files are named by absolute path, so a copy of this file elsewhere (a
 * test's private server) still finds them.
 */
export function serverConfig(opts: {
  operatorJwt: string;
  systemAccount: string;
  preload: Record<string, string>;
  tls?: BrokerTlsFiles;
  cluster?: ClusterNode;
}): string {
  const preload = Object.entries(opts.preload)
    .map(([k, v]) => `  ${k}: ${v}`)
    .join('\n');
  return [
    '# Generated by scripts/local-nats.ts from the JWTs beside it; regenerated on every start. Never commit it.',
    `operator: ${opts.operatorJwt}`,
    `system_account: ${opts.systemAccount}`,
    'jetstream { store_dir: "jetstream" }',
    'resolver { type: full, dir: "accounts", allow_delete: false, interval: "2m" }',
    `resolver_preload {\n${preload}\n}`,
    // Invoice PDFs travel base64 in one reply: a 2,000-line invoice's PDF (about 5 MB) must fit. Above 8 MB NATS
    // itself advises against single messages.
    'max_payload: 8MB',
    // An idle client or route that stops answering (a frozen node, a half-open network) is dropped within 4-6 s
    // instead of a minute. The services and agents ping more often themselves (platform/nats-failover.ts), and the
    // server does not ping a connection it hears from. (On nats-server 2.9 a route that carries traffic is not pinged
    // either, so a frozen node's routes stay up: docs/operations.md, Failover timing.)
    'ping_interval: "2s"',
    'ping_max: 2',
    ...(opts.tls ? [tlsBlock('tls', opts.tls)] : []),
    ...(opts.cluster ? clusterBlock(opts.cluster, opts.tls) : []),
    '',
  ].join('\n');
}

/** One node of a JetStream cluster: its unique name, where its route port listens, and every node's route URL. */
export interface ClusterNode {
  cluster: string;
  serverName: string;
  listen: string;
  routes: string[];
}

/**
 * Routes between the nodes: JetStream's meta group and every stream's and consumer's raft group run over them, and so
 * do account updates (a revocation pushed to one node reaches the others' full resolvers). With `tls`, routes speak
 * TLS both ways (`verify`: a node must present a certificate of the same CA, which is how peers authenticate).
 */
function clusterBlock(node: ClusterNode, tls: BrokerTlsFiles | undefined): string[] {
  const routes = node.routes.map((r) => `    ${JSON.stringify(r)}`).join('\n');
  const inner = [
    `  name: ${JSON.stringify(node.cluster)}`,
    `  listen: ${JSON.stringify(node.listen)}`,
    `  routes: [\n${routes}\n  ]`,
  ];
  if (tls) inner.push(tlsBlock('tls', tls, true).replace(/^/gm, '  '));
  return [`server_name: ${JSON.stringify(node.serverName)}`, `cluster {\n${inner.join('\n')}\n}`];
}

/** The JWTs a server configuration is written from, as ensureTrust left them in `dir`. */
export async function readTrust(
  dir: string,
): Promise<{ operatorJwt: string; systemAccount: string; preload: Record<string, string> }> {
  const read = async (f: string): Promise<string> => (await readFile(join(dir, f), 'utf8')).trim();
  const operatorJwt = await read(TRUST_FILES.operatorJwt);
  const systemJwt = await read(TRUST_FILES.systemAccountJwt);
  const accountJwt = await read(TRUST_FILES.accountJwt);
  const systemAccount = subjectOf(systemJwt);
  return { operatorJwt, systemAccount, preload: { [systemAccount]: systemJwt, [subjectOf(accountJwt)]: accountJwt } };
}

/** A nats-server `tls {}` block; `verify` also asks the peer for a certificate of the same CA (cluster routes). */
export function tlsBlock(name: string, files: BrokerTlsFiles, verify = false): string {
  const lines = [
    `  cert_file: ${JSON.stringify(files.cert)}`,
    `  key_file: ${JSON.stringify(files.key)}`,
    ...(files.ca ? [`  ca_file: ${JSON.stringify(files.ca)}`] : []),
    ...(verify ? ['  verify: true'] : []),
    '  timeout: 5',
  ];
  return `${name} {\n${lines.join('\n')}\n}`;
}
