import { allEntities } from '../actors/index.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { anonymousContext } from '../contracts/context.ts';
import { DomainError } from '../contracts/errors.ts';
import {
  adminPasswordState,
  clearAdminLockouts,
  resetAdminPassword,
  type AdminAccount,
} from '../actors/identity/admin-account.ts';
import { PasswordHasher } from '../actors/identity/passwords.ts';
import { AuditRecorder } from '../platform/audit.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig, type Config } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { setNamespace } from '../platform/namespace.ts';
import { connectNats } from '../platform/nats.ts';
import { Stores } from '../platform/stores/index.ts';
import { redactCredentials } from '../platform/stores/kv.ts';

/**
 * `npm run admin -- status`: whether the admin account (SVC_ADMIN_EMAIL) exists in SVC_DB_URL's database and whether
 * SVC_ADMIN_PASSWORD is its password (`npm start` runs it after the migrations).
 * `npm run admin -- reset-password [--password <p>]`: gives that account a new password (generated, or the one given,
 * checked against the password policy), writes it into data/secrets.env as SVC_ADMIN_PASSWORD, revokes the
 * account's sessions, clears its login lockout and prints it. `--secrets-file <path>` names another file.
 */
const USAGE = 'usage: npm run admin -- status | reset-password [--password <password>] [--secrets-file <path>]';
const DEFAULT_SECRETS = join(dirname(fileURLToPath(import.meta.url)), '..', 'data', 'secrets.env');
/** How long the audit entry may wait for the broker: the password is set by then, whatever the broker does. */
const AUDIT_TIMEOUT_MS = 10_000;

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** SVC_ADMIN_PASSWORD's value in a secrets file, or undefined (no file, no such line). */
function savedPassword(file: string): string | undefined {
  try {
    for (const line of readFileSync(file, 'utf8').split('\n'))
      if (line.startsWith('SVC_ADMIN_PASSWORD=')) return line.slice('SVC_ADMIN_PASSWORD='.length);
  } catch {
    return undefined;
  }
  return undefined;
}

/** Replaces (or adds) SVC_ADMIN_PASSWORD in the file, other lines kept; mode 600, written whole or not at all. */
function savePassword(file: string, password: string): void {
  let lines: string[] = [];
  try {
    lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const entry = `SVC_ADMIN_PASSWORD=${password}`;
  const at = lines.findIndex((l) => l.startsWith('SVC_ADMIN_PASSWORD='));
  if (at >= 0) lines[at] = entry;
  else lines.push(entry);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${lines.join('\n')}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** 24 characters from 18 random bytes (base64url), as the set-up generates them. */
const generatePassword = (): string => randomBytes(18).toString('base64url');

async function status(config: Config, stores: Stores, secrets: string, io: Io): Promise<number> {
  const email = config.SVC_ADMIN_EMAIL;
  const password = config.SVC_ADMIN_PASSWORD;
  if (!email || !password) {
    io.err('[admin] SVC_ADMIN_EMAIL and SVC_ADMIN_PASSWORD are not both set: no admin account is seeded');
    return 0;
  }
  const where = savedPassword(secrets) === password ? ` (kept in ${secrets})` : '';
  const em = (await stores.orm()).em.fork();
  const found = await adminPasswordState(em, new PasswordHasher(), email, password);
  if (found.state === 'absent') {
    io.err(`[admin] first run: the admin account is ${email} with password ${password}${where}`);
  } else if (found.state === 'matches') {
    io.err(`[admin] the admin account is ${email}; its password is SVC_ADMIN_PASSWORD${where}`);
  } else {
    io.err(
      `[admin] the admin account ${email} already exists in this database (${redactCredentials(config.SVC_DB_URL)}),` +
        ` and its password is not SVC_ADMIN_PASSWORD${where}` +
        ` (set elsewhere: another checkout on the same database, or before data/ was removed).` +
        ` To give it a new one: npm run admin -- reset-password`,
    );
  }
  if (found.state !== 'absent' && found.account.status !== 'active')
    io.err(`[admin] note: ${found.account.email} is ${found.account.status}, not active`);
  return 0;
}

/** Records the reset through the audit stream when the broker answers in time; says so when it does not. */
async function audit(config: Config, account: AdminAccount, sessionsRevoked: number, io: Io): Promise<void> {
  const log = createLogger('silent', 'admin');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no broker at ${config.SVC_NATS_URL} within ${AUDIT_TIMEOUT_MS} ms`)),
      AUDIT_TIMEOUT_MS,
    );
  });
  try {
    const nc = await Promise.race([
      connectNats(config.SVC_NATS_URL, `admin-${process.pid}`, log, config.SVC_NATS_CREDS, config.SVC_NATS_CA),
      timeout,
    ]);
    try {
      await Promise.race([
        new AuditRecorder(nc, systemClock).record(anonymousContext(randomUUID()), {
          action: 'user.password_reset',
          resource_type: 'user',
          resource_id: account.id,
          client_ids: [],
          details: { method: 'admin_command', os_user: userInfo().username, sessions_revoked: sessionsRevoked },
        }),
        timeout,
      ]);
    } finally {
      await nc.close();
    }
  } catch (err) {
    io.err(`[admin] warning: the audit entry was not recorded: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

async function resetPassword(
  config: Config,
  stores: Stores,
  secrets: string,
  given: string | undefined,
  io: Io,
): Promise<number> {
  const email = config.SVC_ADMIN_EMAIL;
  if (!email) {
    io.err('[admin] SVC_ADMIN_EMAIL is not set: which account is the admin?');
    return 2;
  }
  // One line of data/secrets.env holds it.
  if (given !== undefined && /[\r\n]/.test(given)) {
    io.err('[admin] refused: password: must be one line');
    return 2;
  }
  const password = given ?? generatePassword();
  let result: Awaited<ReturnType<typeof resetAdminPassword>>;
  try {
    result = await resetAdminPassword(
      { orm: await stores.orm(), hasher: new PasswordHasher(), clock: systemClock },
      email,
      password,
    );
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    if (err.code === 'bad_request') {
      io.err(`[admin] refused: ${err.message}`);
      return 2;
    }
    io.err(`[admin] ${err.message}: \`npm start\` creates it with SVC_ADMIN_PASSWORD (${secrets})`);
    return 1;
  }
  // The password is set from here on: whatever fails below is said, and the password is still printed.
  let saved = true;
  try {
    savePassword(secrets, password);
  } catch (err) {
    saved = false;
    io.err(`[admin] warning: could not write ${secrets}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let lockout = 'login lockout cleared';
  if (!config.SVC_VALKEY_URL)
    lockout = 'login lockout not cleared: SVC_VALKEY_URL is unset, a running system keeps it in memory until restarted';
  else {
    try {
      await clearAdminLockouts({ kv: await stores.kv(), clock: systemClock }, result.account);
    } catch (err) {
      lockout = `login lockout not cleared: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  await audit(config, result.account, result.sessionsRevoked, io);
  io.out(
    `the admin account ${result.account.email} now has the password ${password}` +
      (saved ? ` (SVC_ADMIN_PASSWORD in ${secrets})` : ''),
  );
  io.out(`${result.sessionsRevoked} session(s) revoked; ${lockout}`);
  if (result.account.status !== 'active')
    io.err(`[admin] note: ${result.account.email} is ${result.account.status}, so it still cannot sign in`);
  return 0;
}

const parse = (args: readonly string[]) =>
  parseArgs({
    args: [...args],
    allowPositionals: true,
    options: { password: { type: 'string' }, 'secrets-file': { type: 'string' } },
  });

export async function adminCommand(args: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (err) {
    io.err(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  const [command, ...extra] = parsed.positionals;
  if (extra.length > 0 || (command !== 'status' && command !== 'reset-password')) {
    io.err(USAGE);
    return 2;
  }
  if (command === 'status' && parsed.values.password !== undefined) {
    io.err(USAGE);
    return 2;
  }
  const config = loadConfig(env);
  setNamespace(config.SVC_NAMESPACE);
  const stores = new Stores(config, createLogger('silent', 'admin'), { entities: allEntities });
  const secrets = resolve(parsed.values['secrets-file'] ?? DEFAULT_SECRETS);
  try {
    return command === 'status'
      ? await status(config, stores, secrets, io)
      : await resetPassword(config, stores, secrets, parsed.values.password, io);
  } finally {
    await stores.close();
  }
}

const entry = process.argv[1];
if (entry && import.meta.url === pathToFileURL(realpathSync(entry)).href) {
  const io: Io = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) };
  adminCommand(process.argv.slice(2), process.env, io).then(
    (code) => process.exit(code),
    (err: unknown) => {
      io.err(`[admin] ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
