import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearAdminLockouts, resetAdminPassword } from '../../actors/identity/admin-account.ts';
import { PasswordHasher } from '../../actors/identity/passwords.ts';
import { brokerEnv } from '../support/env.ts';
import { waitForAuditRow } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * `npm run admin` (scripts/admin.ts) against a database that already holds the admin: `status` says so instead of
 * offering a password that does not sign in, and `reset-password` sets one that does.
 */

const SEEDED = 'seeded admin passphrase 3';
/** What a second checkout (or a fresh data/) generated into its secrets file: never the account's password. */
const OTHER = 'other checkout passphrase';

let sys: TestSystem;
let email: string;
let dir: string;
let secrets: string;

beforeAll(async () => {
  email = `admin-cmd-${randomUUID().slice(0, 8)}@example.com`;
  sys = await startTestSystem({ SVC_ADMIN_EMAIL: email, SVC_ADMIN_PASSWORD: SEEDED });
  dir = mkdtempSync(join(tmpdir(), 'admin-cmd-'));
  secrets = join(dir, 'secrets.env');
  writeFileSync(secrets, `# kept\nSVC_JWT_SECRET=keep-me\nSVC_ADMIN_PASSWORD=${OTHER}\n`, { mode: 0o600 });
});

afterAll(async () => {
  await sys?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** scripts/admin.ts as `npm run admin` runs it, on the test system's database and broker. */
function admin(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['scripts/admin.ts', ...args, '--secrets-file', secrets], {
    env: {
      ...process.env,
      ...brokerEnv(),
      SVC_DB_URL: sys.config.SVC_DB_URL,
      ...(sys.config.SVC_VALKEY_URL ? { SVC_VALKEY_URL: sys.config.SVC_VALKEY_URL } : {}),
      SVC_ADMIN_EMAIL: email,
      SVC_ADMIN_PASSWORD: OTHER,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  proc.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })));
}

const loginStatus = async (password: string): Promise<number> =>
  (await sys.http({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })).statusCode;

describe('npm run admin', () => {
  it('status: an admin already in the database is reported as such, with no password claimed for it', async () => {
    const r = await admin(['status']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`the admin account ${email} already exists in this database`);
    expect(r.stderr).toContain('npm run admin -- reset-password');
    expect(r.stderr).not.toContain(OTHER);
    expect(r.stderr).not.toContain('first run');
    // The seeded password is still the one that works.
    expect(await loginStatus(OTHER)).toBe(401);
    expect(await loginStatus(SEEDED)).toBe(200);

    // An e-mail the database does not hold is the first run: that password is what the seed will give it.
    const fresh = await admin(['status'], { SVC_ADMIN_EMAIL: `nobody-${sys.tag}@example.com` });
    expect(fresh.code).toBe(0);
    expect(fresh.stderr).toContain(
      `first run: the admin account is nobody-${sys.tag}@example.com with password ${OTHER}`,
    );
  }, 120_000);

  it('reset-password: a new password that signs in, kept in the secrets file; sessions revoked, audited', async () => {
    const before = await sys.http({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: SEEDED } });
    expect(before.statusCode).toBe(200);
    const { refresh_token } = (before.json() as { data: { refresh_token: string } }).data;

    const [live] = await sys.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = ? AND NOT s.is_revoked`,
      [email],
    );
    expect(live!.n).toBeGreaterThan(0);

    const r = await admin(['reset-password']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('warning');
    const password = new RegExp(`the admin account ${email} now has the password (\\S+) `).exec(r.stdout)?.[1];
    expect(password, r.stdout).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(r.stdout).toContain(`${live!.n} session(s) revoked; login lockout cleared`);

    const file = readFileSync(secrets, 'utf8');
    expect(file).toBe(`# kept\nSVC_JWT_SECRET=keep-me\nSVC_ADMIN_PASSWORD=${password}\n`);
    expect(statSync(secrets).mode & 0o777).toBe(0o600);

    expect(await loginStatus(password!)).toBe(200);
    expect(await loginStatus(SEEDED)).toBe(401);
    const refreshed = await sys.http({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token } });
    expect(refreshed.statusCode).toBe(401);

    const [user] = await sys.sql<{ id: string }>(`SELECT id FROM users WHERE email = ?`, [email]);
    const entry = await waitForAuditRow(sys, user!.id, 'user.password_reset');
    expect(entry.details).toMatchObject({ method: 'admin_command', sessions_revoked: live!.n });

    // Now status finds SVC_ADMIN_PASSWORD (as the secrets file has it) to be the account's.
    const status = await admin(['status'], { SVC_ADMIN_PASSWORD: password! });
    expect(status.stderr).toContain(`the admin account is ${email}; its password is SVC_ADMIN_PASSWORD (kept in`);
  }, 120_000);

  it('reset-password --password: checked against the password policy, then set', async () => {
    const refused = await admin(['reset-password', '--password', 'too short']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('refused: password: must be at least 12 characters');
    // The rest of the policy, by the function the command calls.
    const deps = { orm: await sys.stores.orm(), hasher: new PasswordHasher(), clock: sys.clock };
    await expect(resetAdminPassword(deps, email, '1qaz2wsx3edc')).rejects.toThrow(/most common passwords/);
    await expect(resetAdminPassword(deps, email, SEEDED)).rejects.toThrow(/must differ from your last 5 passwords/);

    const chosen = 'chosen admin passphrase 4';
    const r = await admin(['reset-password', '--password', chosen]);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(secrets, 'utf8')).toContain(`\nSVC_ADMIN_PASSWORD=${chosen}\n`);
    expect(await loginStatus(chosen)).toBe(200);

    const usage = await admin(['reset-pasword']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: npm run admin');
  }, 120_000);

  it('a reset clears the login lockout of the account', async () => {
    // The test system keeps its lockouts under a prefix of its own: the same steps as the command, on its store.
    let status = 401;
    for (let i = 0; i < 10 && status === 401; i++) status = await loginStatus('wrong admin passphrase');
    expect(status).toBe(429);
    expect(await loginStatus('chosen admin passphrase 4')).toBe(429);
    const deps = {
      orm: await sys.stores.orm(),
      kv: await sys.stores.kv(),
      hasher: new PasswordHasher(),
      clock: sys.clock,
    };
    const { account } = await resetAdminPassword(deps, email.toUpperCase(), 'after lockout passphrase 5');
    await clearAdminLockouts(deps, account);
    expect(await loginStatus('after lockout passphrase 5')).toBe(200);
  }, 120_000);
});
