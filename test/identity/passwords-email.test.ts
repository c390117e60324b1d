import type { EntityManager } from '@mikro-orm/postgresql';
import type { LightMyRequestResponse } from 'fastify';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSender, ehloName, emailTransportKind, sendInvitation } from '../../actors/identity/email.ts';
import { RESET_MAILS_PER_HOUR } from '../../actors/identity/session/passwords.ts';
import { createOneTimeToken } from '../../actors/identity/one-time-tokens.ts';
import { createLogger } from '../../platform/logger.ts';
import { createUser, login, tokenFor } from '../support/identity.ts';
import { decodeMail, SmtpPeer, type ReceivedMail } from '../support/smtp-peer.ts';
import { errorOf, startTestSystem, type TestSystem } from '../support/system.ts';

const FRONTEND = 'http://console.test/app';
const FROM = 'security@console.test';
const FROM_NAME = 'Console Test';
const NEW_PASSWORD = 'a brand new passphrase 42';

let sys: TestSystem;
let smtp: SmtpPeer;

beforeAll(async () => {
  smtp = await new SmtpPeer().start();
  const port = smtp.port;
  sys = await startTestSystem({
    SVC_SMTP_HOST: '127.0.0.1',
    SVC_SMTP_PORT: String(port),
    SVC_FRONTEND_URL: FRONTEND,
    SVC_EMAIL_FROM: FROM,
    SVC_EMAIL_FROM_NAME: FROM_NAME,
  });
});

afterAll(async () => {
  await sys?.stop();
  await smtp?.stop();
});

const post = (url: string, payload: object, token?: string): Promise<LightMyRequestResponse> =>
  sys.http({ method: 'POST', url, payload, ...(token ? { token } : {}) });

async function waitForMail(
  to: string,
  kind: 'reset-password' | 'accept-invite',
  timeoutMs = 15_000,
): Promise<{ mail: ReceivedMail; text: string; token: string }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const mail of smtp.mails) {
      if (!mail.to.includes(to)) continue;
      const text = decodeMail(mail.raw);
      const m = new RegExp(`${FRONTEND.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/${kind}\\?token=([A-Za-z0-9_-]+)`).exec(
        text,
      );
      if (m) {
        smtp.mails.splice(smtp.mails.indexOf(mail), 1);
        return { mail, text, token: m[1]! };
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${kind} mail to ${to} within ${timeoutMs} ms`);
}

/** The next mail to `to` whose Subject matches, taken off the list. */
async function waitForSubject(
  to: string,
  subject: RegExp,
  timeoutMs = 15_000,
): Promise<{ mail: ReceivedMail; text: string }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const mail = smtp.mails.find((m) => m.to.includes(to) && subject.test(/^Subject: (.*)$/m.exec(m.raw)?.[1] ?? ''));
    if (mail) {
      smtp.mails.splice(smtp.mails.indexOf(mail), 1);
      return { mail, text: decodeMail(mail.raw) };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no mail to ${to} with subject ${String(subject)} within ${timeoutMs} ms`);
}

/** Waits until `resourceId` has `count` audit entries `action`. */
async function waitForAuditCount(resourceId: string, action: string, count: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let n = 0;
  while (Date.now() < deadline) {
    n = Number(
      (
        await sys.sql<{ n: string }>(`SELECT count(*) AS n FROM audit_log WHERE resource_id = ? AND action = ?`, [
          resourceId,
          action,
        ])
      )[0]!.n,
    );
    if (n >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${n} audit entries ${action} for ${resourceId}, expected ${count}`);
}

async function em(): Promise<EntityManager> {
  return (await sys.stores.orm()).em.fork() as EntityManager;
}
/** What createOneTimeToken needs from the deps: the clock. */
const tokenDeps = (): { clock: TestSystem['clock'] } => ({ clock: sys.clock });
const resetToken = async (userId: string): Promise<string> =>
  createOneTimeToken(await em(), tokenDeps(), userId, 'reset');

const reset = (token: string, new_password: string): Promise<LightMyRequestResponse> =>
  post('/api/v1/auth/reset-password', { token, new_password });
const refreshStatus = async (refresh_token: string): Promise<number> =>
  (await post('/api/v1/auth/refresh', { refresh_token })).statusCode;

describe('forgot and reset password', () => {
  it('answers identically whether or not the account exists, and mails a working reset link only to a real one', async () => {
    const user = await createUser(sys);
    const session = await login(sys, user);
    const ghost = `ghost-${sys.tag}@example.com`;
    const a = await post('/api/v1/auth/forgot-password', { email: ghost });
    const b = await post('/api/v1/auth/forgot-password', { email: user.email.toUpperCase() });
    expect(a.statusCode).toBe(200);
    expect(b.statusCode).toBe(200);
    expect(a.json()).toEqual({
      data: { message: 'If an account exists for that e-mail, a reset link has been sent.' },
    });
    expect(b.body).toBe(a.body);

    const { mail, text, token } = await waitForMail(user.email, 'reset-password');
    expect(mail.from).toBe(FROM);
    // nodemailer drops the quotes around a display name that does not need them.
    expect(text).toMatch(new RegExp(`^From: "?${FROM_NAME}"? <${FROM}>`, 'm'));
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(smtp.mails.some((m) => m.to.includes(ghost))).toBe(false);
    // Only the hash is stored.
    expect(await sys.sql(`SELECT id FROM one_time_tokens WHERE token_hash = ?`, [token])).toHaveLength(0);

    const res = await reset(token, NEW_PASSWORD);
    expect(res.statusCode, res.body).toBe(200);
    // Every session revoked; the old password is gone, the new one works.
    expect(await refreshStatus(session.refresh_token)).toBe(401);
    expect((await post('/api/v1/auth/login', { email: user.email, password: user.password })).statusCode).toBe(401);
    await login(sys, { ...user, password: NEW_PASSWORD });
    // Single use.
    const again = await reset(token, 'another new passphrase 43');
    expect(again.statusCode).toBe(400);
    expect(errorOf(again).code).toBe('bad_request');
  });

  it('sends nothing for invited or disabled accounts', async () => {
    const invited = await createUser(sys, { status: 'invited' });
    const disabled = await createUser(sys, { status: 'disabled' });
    const active = await createUser(sys);
    for (const u of [invited, disabled, active])
      expect((await post('/api/v1/auth/forgot-password', { email: u.email })).statusCode).toBe(200);
    // Jobs are handled in order: once the active user's mail is there, the others were handled too.
    await waitForMail(active.email, 'reset-password');
    await new Promise((r) => setTimeout(r, 200));
    expect(smtp.mails.some((m) => m.to.includes(invited.email) || m.to.includes(disabled.email))).toBe(false);
  });

  it('retries a mail the server refuses for now, so it is not lost', async () => {
    const user = await createUser(sys);
    smtp.flaky.set(user.email, 1);
    expect((await post('/api/v1/auth/forgot-password', { email: user.email })).statusCode).toBe(200);
    const { token } = await waitForMail(user.email, 'reset-password', 20_000);
    expect(smtp.flaky.get(user.email)).toBe(0);
    expect((await reset(token, NEW_PASSWORD)).statusCode).toBe(200);
  });

  it(`mails one address at most ${RESET_MAILS_PER_HOUR} reset links an hour, answering every request the same`, async () => {
    const user = await createUser(sys);
    const answers = [];
    for (let i = 0; i < RESET_MAILS_PER_HOUR + 2; i += 1)
      answers.push(await post('/api/v1/auth/forgot-password', { email: user.email }));
    for (const a of answers) {
      expect(a.statusCode).toBe(200);
      expect(a.body).toBe(answers[0]!.body);
    }
    for (let i = 0; i < RESET_MAILS_PER_HOUR; i += 1) await waitForMail(user.email, 'reset-password');
    // The requests over the limit are handled (and audited) without a token or a mail.
    await waitForAuditCount(user.id, 'user.password_reset_throttled', 2);
    expect(
      await sys.sql(`SELECT id FROM one_time_tokens WHERE user_id = ? AND purpose = 'reset'`, [user.id]),
    ).toHaveLength(RESET_MAILS_PER_HOUR);
    expect(
      smtp.mails.some((m) => m.to.includes(user.email) && decodeMail(m.raw).includes('/reset-password?token=')),
    ).toBe(false);

    // An hour later the address gets a link again, and it works.
    sys.clock.advance(61 * 60_000);
    expect((await post('/api/v1/auth/forgot-password', { email: user.email })).statusCode).toBe(200);
    const { token } = await waitForMail(user.email, 'reset-password');
    expect((await reset(token, NEW_PASSWORD)).statusCode).toBe(200);
  });

  it('mails a notice without a link after a reset', async () => {
    const user = await createUser(sys, { displayName: 'Notice Reader' });
    expect((await reset(await resetToken(user.id), NEW_PASSWORD)).statusCode).toBe(200);
    const { text } = await waitForSubject(user.email, new RegExp(`^Your ${FROM_NAME} password was reset$`));
    expect(text).toContain('Hello Notice Reader,');
    expect(text).toMatch(/was reset with a reset link on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(text).toContain("If it wasn't, reset your password at once");
    expect(text).not.toMatch(/https?:\/\//);
  });

  it('applies the password policy before redeeming the token', async () => {
    const user = await createUser(sys);
    const token = await resetToken(user.id);
    const short = await reset(token, 'short pass');
    expect(short.statusCode).toBe(400);
    expect(errorOf(short).message).toMatch(/new_password.*at least 12 characters/);
    for (const common of ['qwerty123456', 'QwErTy123456', '1qaz2wsx3edc', 'password1234', 'QWERTYUIOP123']) {
      const res = await reset(token, common);
      expect(res.statusCode, common).toBe(400);
      expect(errorOf(res).message).toMatch(/most common passwords/);
    }
    const same = await reset(token, user.password);
    expect(same.statusCode).toBe(400);
    expect(errorOf(same).message).toMatch(/last 5 passwords/);
    // Still usable after the refusals.
    expect((await reset(token, NEW_PASSWORD)).statusCode).toBe(200);
  });

  it('expires reset tokens after 1 hour; a newer token voids the older', async () => {
    const user = await createUser(sys);
    const old = await resetToken(user.id);
    sys.clock.advance(61 * 60_000);
    expect((await reset(old, NEW_PASSWORD)).statusCode).toBe(400);
    const first = await resetToken(user.id);
    const second = await resetToken(user.id);
    expect((await reset(first, NEW_PASSWORD)).statusCode).toBe(400);
    expect((await reset(second, NEW_PASSWORD)).statusCode).toBe(200);
  });

  it('lets exactly one of two racing resets with the same token through', async () => {
    const user = await createUser(sys);
    const token = await resetToken(user.id);
    const results = await Promise.all([
      reset(token, 'racing passphrase one'),
      reset(token, 'racing passphrase two'),
      reset(token, 'racing passphrase three'),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400, 400]);
    const history = await sys.sql<{ n: string }>(`SELECT count(*) AS n FROM password_history WHERE user_id = ?`, [
      user.id,
    ]);
    expect(Number(history[0]!.n)).toBe(1);
  });

  it('clears the login lockout of the account on reset', async () => {
    const user = await createUser(sys);
    for (let i = 0; i < 5; i += 1)
      await post('/api/v1/auth/login', { email: user.email, password: `wrong ${i} wrong wrong` });
    expect((await post('/api/v1/auth/login', { email: user.email, password: user.password })).statusCode).toBe(429);
    expect((await reset(await resetToken(user.id), NEW_PASSWORD)).statusCode).toBe(200);
    expect((await post('/api/v1/auth/login', { email: user.email, password: NEW_PASSWORD })).statusCode).toBe(202);
  });
});

describe('change password', () => {
  const change = (token: string, current_password: string, new_password: string): Promise<LightMyRequestResponse> =>
    sys.http({ method: 'PUT', url: '/api/v1/auth/password', payload: { current_password, new_password }, token });

  it('checks the current password, the policy and the last 5 passwords', async () => {
    const user = await createUser(sys);
    const { access_token: token } = await login(sys, user);
    const wrong = await change(token, 'not the current one', NEW_PASSWORD);
    expect(wrong.statusCode).toBe(400);
    expect(errorOf(wrong).message).toMatch(/current_password/);
    const short = await change(token, user.password, 'tiny');
    expect(short.statusCode).toBe(400);
    expect(errorOf(short).message).toMatch(/at least 12/);
    expect((await change(token, user.password, 'Sonyericsson')).statusCode).toBe(400);

    const passwords = [
      user.password,
      'history pass one 01',
      'history pass two 02',
      'history pass three 03',
      'history pass four 04',
      'history pass five 05',
    ];
    for (let i = 1; i < passwords.length; i += 1) {
      const res = await change(token, passwords[i - 1]!, passwords[i]!);
      expect(res.statusCode, res.body).toBe(200);
    }
    // The last five: passwords[1..5]; passwords[1] is refused, the original (6th back) is allowed again.
    const reuse = await change(token, passwords[5]!, passwords[1]!);
    expect(reuse.statusCode).toBe(400);
    expect(errorOf(reuse).message).toMatch(/last 5 passwords/);
    expect((await change(token, passwords[5]!, passwords[5]!)).statusCode).toBe(400);
    expect((await change(token, passwords[5]!, passwords[0]!)).statusCode).toBe(200);
    // Sessions are kept on a change.
    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token })).statusCode).toBe(200);
  });

  it('mails a notice after a change', async () => {
    const user = await createUser(sys);
    const { access_token: token } = await login(sys, user);
    expect((await change(token, user.password, NEW_PASSWORD)).statusCode).toBe(200);
    const { text } = await waitForSubject(user.email, new RegExp(`^Your ${FROM_NAME} password was changed$`));
    expect(text).toMatch(/account was changed on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
  });

  it('cancels outstanding reset links', async () => {
    const user = await createUser(sys);
    const { access_token: token } = await login(sys, user);
    const pending = await resetToken(user.id);
    expect((await change(token, user.password, NEW_PASSWORD)).statusCode).toBe(200);
    expect((await reset(pending, 'yet another passphrase 7')).statusCode).toBe(400);
  });

  it('locks the current-password check after repeated failures', async () => {
    const user = await createUser(sys);
    const { access_token: token } = await login(sys, user);
    for (let i = 0; i < 5; i += 1)
      expect((await change(token, `wrong current ${i}`, NEW_PASSWORD)).statusCode).toBe(400);
    const locked = await change(token, user.password, NEW_PASSWORD);
    expect(locked.statusCode).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    sys.clock.advance(61_000);
    expect((await change(token, user.password, NEW_PASSWORD)).statusCode).toBe(200);
  });
});

describe('invitations', () => {
  async function invitedUser(): Promise<{ id: string; email: string }> {
    const id = randomUUID();
    const email = `invitee-${sys.tag}-${id.slice(0, 8)}@example.com`;
    await sys.sql(`INSERT INTO users (id, email, display_name, status) VALUES (?, ?, 'New Colleague', 'invited')`, [
      id,
      email,
    ]);
    return { id, email };
  }

  it('mails an invitation whose token activates the account, sets the password and signs in', async () => {
    const user = await invitedUser();
    const raw = await createOneTimeToken(await em(), tokenDeps(), user.id, 'invite');
    await sendInvitation({ config: sys.config, nc: sys.nc }, { email: user.email, display_name: 'New Colleague' }, raw);
    const { token, text } = await waitForMail(user.email, 'accept-invite');
    expect(token).toBe(raw);
    expect(text).toContain('New Colleague');

    const weak = await post('/api/v1/auth/accept-invite', { token, password: 'qazwsxedcrfv' });
    expect(weak.statusCode).toBe(400);
    const res = await post('/api/v1/auth/accept-invite', { token, password: NEW_PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    const tokens = (
      res.json() as {
        data: {
          access_token: string;
          refresh_token: string;
          session_id: string;
          token_type: string;
          expires_in: number;
        };
      }
    ).data;
    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.expires_in).toBe(900);
    const [row] = await sys.sql<{ status: string; password_hash: string | null }>(
      `SELECT status, password_hash FROM users WHERE id = ?`,
      [user.id],
    );
    expect(row!.status).toBe('active');
    expect(row!.password_hash).toMatch(/^\$argon2id\$/);
    expect(await sys.sql(`SELECT id FROM password_history WHERE user_id = ?`, [user.id])).toHaveLength(1);

    // Signed in, but MFA enrolment comes first.
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token: tokens.access_token });
    expect(me.statusCode).toBe(200);
    expect((me.json() as { data: { user: { status: string; mfa_enabled: boolean } } }).data.user).toMatchObject({
      status: 'active',
      mfa_enabled: false,
    });
    const gate = await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token: tokens.access_token });
    expect(gate.statusCode).toBe(403);
    expect(errorOf(gate).code).toBe('mfa_enrollment_required');
    expect(await refreshStatus(tokens.refresh_token)).toBe(200);

    // Used once.
    expect((await post('/api/v1/auth/accept-invite', { token, password: 'another passphrase 99' })).statusCode).toBe(
      400,
    );
    // And the password works at login.
    expect((await post('/api/v1/auth/login', { email: user.email, password: NEW_PASSWORD })).statusCode).toBe(200);
  });

  it('lets exactly one of racing accept-invite requests with the same token through', async () => {
    const user = await invitedUser();
    const raw = await createOneTimeToken(await em(), tokenDeps(), user.id, 'invite');
    const passwords = ['racing invitee pass one', 'racing invitee pass two', 'racing invitee pass three'];
    const results = await Promise.all(
      passwords.map((password) => post('/api/v1/auth/accept-invite', { token: raw, password })),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400, 400]);
    // One password, one session: the losers changed nothing.
    expect(await sys.sql(`SELECT id FROM password_history WHERE user_id = ?`, [user.id])).toHaveLength(1);
    expect(await sys.sql(`SELECT id FROM sessions WHERE user_id = ?`, [user.id])).toHaveLength(1);
  });

  it("stores and mails the address with its local part as given (case folding is the receiving server's)", async () => {
    const admin = await createUser(sys, { superAdmin: true });
    const given = `Jane.Doe-${sys.tag}@Example.COM`;
    const res = await sys.http({
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: given, display_name: 'Jane' },
      token: await tokenFor(sys, admin),
    });
    expect(res.statusCode, res.body).toBe(201);
    const stored = `Jane.Doe-${sys.tag}@example.com`;
    expect((res.json() as { data: { email: string } }).data.email).toBe(stored);
    const { mail, text } = await waitForMail(stored, 'accept-invite');
    expect(mail.to).toEqual([stored]);
    expect(text).toMatch(new RegExp(`^To: ${stored}`, 'm'));
    // Still one account per address whatever the case.
    const again = await sys.http({
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: given.toLowerCase(), display_name: 'Jane' },
      token: await tokenFor(sys, admin),
    });
    expect(again.statusCode).toBe(409);
  });

  it('expires invitations after 24 hours and refuses reset tokens as invitations', async () => {
    const user = await invitedUser();
    const raw = await createOneTimeToken(await em(), tokenDeps(), user.id, 'invite');
    sys.clock.advance(24 * 60 * 60_000 + 1_000);
    expect((await post('/api/v1/auth/accept-invite', { token: raw, password: NEW_PASSWORD })).statusCode).toBe(400);
    const resetRaw = await createOneTimeToken(await em(), tokenDeps(), user.id, 'reset');
    expect((await post('/api/v1/auth/accept-invite', { token: resetRaw, password: NEW_PASSWORD })).statusCode).toBe(
      400,
    );
    const fresh = await createOneTimeToken(await em(), tokenDeps(), user.id, 'invite');
    expect((await post('/api/v1/auth/accept-invite', { token: fresh, password: NEW_PASSWORD })).statusCode).toBe(200);
  });
});

describe('e-mail senders', () => {
  const log = createLogger('silent');

  it('marks every mail Auto-Submitted: auto-generated and says EHLO with the frontend host name', async () => {
    const user = await createUser(sys);
    expect((await post('/api/v1/auth/forgot-password', { email: user.email })).statusCode).toBe(200);
    const { mail, text } = await waitForMail(user.email, 'reset-password');
    expect(text).toMatch(/^Auto-Submitted: auto-generated\r?$/m);
    expect(mail.ehlo).toBe('console.test');
  });

  it('takes the EHLO name from SVC_SMTP_EHLO_NAME, else the frontend host, else the sender domain', async () => {
    const base = {
      SVC_SMTP_EHLO_NAME: undefined,
      SVC_FRONTEND_URL: 'https://console.example.org/app',
      SVC_EMAIL_FROM: 'noreply@Mail.Example.NET',
    };
    expect(ehloName(base)).toBe('console.example.org');
    expect(ehloName({ ...base, SVC_FRONTEND_URL: 'http://localhost:3000' })).toBe('mail.example.net');
    expect(ehloName({ ...base, SVC_FRONTEND_URL: 'http://10.1.2.3:3000' })).toBe('mail.example.net');
    expect(
      ehloName({ ...base, SVC_FRONTEND_URL: 'http://localhost:3000', SVC_EMAIL_FROM: 'root@localhost' }),
    ).toBeUndefined();

    const to = `ehlo-${sys.tag}@example.com`;
    await buildSender({ ...sys.config, SVC_SMTP_EHLO_NAME: 'relay.console.test' })(
      { to, subject: 'Hi', text: `plain ${FRONTEND}/reset-password?token=x`, kind: 'test' },
      log,
    );
    expect((await waitForMail(to, 'reset-password')).mail.ehlo).toBe('relay.console.test');
  });

  it('posts to the hosted provider with the API key, and treats a 4xx as final', async () => {
    const seen: { auth: string | undefined; body: Record<string, unknown> }[] = [];
    let status = 200;
    const server: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.url === '/emails' && req.method === 'POST')
          seen.push({ auth: req.headers.authorization, body: JSON.parse(body) as Record<string, unknown> });
        res.writeHead(status, { 'content-type': 'application/json' }).end('{"id":"x"}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const config = {
        ...sys.config,
        SVC_EMAIL_PROVIDER: 'resend' as const,
        SVC_RESEND_API_KEY: 're_test_key',
        SVC_RESEND_URL: url,
      };
      expect(emailTransportKind(config)).toBe('resend');
      const send = buildSender(config);
      await send({ to: 'x@example.com', subject: 'Hi', text: 'plain', html: '<p>hi</p>', kind: 'test' }, log);
      expect(seen).toEqual([
        {
          auth: 'Bearer re_test_key',
          body: {
            from: `"${FROM_NAME}" <${FROM}>`,
            to: ['x@example.com'],
            subject: 'Hi',
            text: 'plain',
            html: '<p>hi</p>',
            headers: { 'Auto-Submitted': 'auto-generated' },
          },
        },
      ]);
      status = 422;
      await expect(send({ to: 'bad', subject: 'Hi', text: 'plain', kind: 'test' }, log)).rejects.toMatchObject({
        name: 'NonRetryableError',
      });
      status = 503;
      await expect(
        send({ to: 'x@example.com', subject: 'Hi', text: 'plain', kind: 'test' }, log),
      ).rejects.toMatchObject({ name: 'Error' });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('logs instead of sending when no sender is configured', async () => {
    const config = { ...sys.config, SVC_SMTP_HOST: undefined, SVC_RESEND_API_KEY: undefined };
    expect(emailTransportKind(config)).toBe('log');
    await buildSender(config)({ to: 'x@example.com', subject: 'Hi', text: 'plain', kind: 'test' }, log);
  });
});
