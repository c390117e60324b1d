import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../support/identity.ts';
import { consoleProblems, expectAccessible, keepScreenshot, launchBrowser } from '../support/browser.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { WebhookReceiver } from '../support/notification-peers.ts';
import { SmtpPeer } from '../support/smtp-peer.ts';
import { brokerEnv } from '../support/env.ts';
import { freePort, waitFor } from '../support/processes.ts';
import { endGroup, spawnGroup, startSystemProcess, type Child, type SystemProcess } from '../support/system-process.ts';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against the whole system started as
 * `npm start` starts it, with a local SMTP peer for the mails: a newcomer's sign-in and MFA enrolment, an
 * invitation accepted from its mail, a password reset from its mail. axe-core checks every page; screenshots of the
 * main pages are kept under data/screenshots.
 */
const tag = randomBytes(4).toString('hex');
const adminEmail = `web-admin-${tag}@example.com`;
const adminPassword = `Web-${randomBytes(12).toString('hex')}`;
const inviteeEmail = `web-user-${tag}@example.com`;
const inviteePassword = `invited passphrase ${tag}`;

const ssoDomain = `sso-${tag}.test`;

let smtp: SmtpPeer;
let oidc: TestOidcProvider;
let system: SystemProcess | undefined;
let browser: Browser;
let agent: Child | undefined;
let agentDir: string | undefined;
/** Filled as the pages show them: what later steps sign in with. */
const recovery: Record<string, string[]> = {};

const totp = (secret: string): string => totpCode(secret, { now: Date.now });

beforeAll(async () => {
  smtp = await new SmtpPeer().start();
  // The provider must know the console's callback before the console starts, so the port is chosen first.
  const consolePort = await freePort();
  oidc = await startOidcProvider({
    clientId: `web-${tag}`,
    clientSecret: `web-sso-secret-${tag}-0123456789`,
    redirectUri: `http://localhost:${consolePort}/api/v1/auth/sso/callback`,
  });
  system = await startSystemProcess(
    `web-${tag}`,
    {
      SVC_ADMIN_EMAIL: adminEmail,
      SVC_ADMIN_PASSWORD: adminPassword,
      SVC_SMTP_HOST: '127.0.0.1',
      SVC_SMTP_PORT: String(smtp.port),
      SVC_SSO_CLIENT_ID: oidc.clientId,
      SVC_SSO_CLIENT_SECRET: oidc.clientSecret,
      SVC_SSO_ISSUER_URL: oidc.issuer,
      SVC_SSO_ALLOWED_DOMAIN: ssoDomain,
      // The notification below goes to a webhook receiver of this test, on loopback.
      SVC_NOTIFY_ALLOW_HTTP: 'true',
      SVC_NOTIFY_ALLOW_PRIVATE: 'true',
    },
    { consolePort },
  );
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await endGroup(agent);
  if (agentDir) rmSync(agentDir, { recursive: true, force: true });
  await browser?.close();
  await endGroup(system?.child, 30_000);
  if (system) rmSync(system.analyticsPath, { recursive: true, force: true });
  await smtp?.stop();
  await oidc?.close();
}, 60_000);

/** A browser profile of its own (cookies included) and a page that collects what its console reports. */
async function freshPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ baseURL: system!.consoleUrl });
  const page = await context.newPage();
  return { context, page, problems: consoleProblems(page) };
}

/** Console errors other than the failed requests a refused call logs (the page shows those itself). */
const realProblems = (problems: string[]): string[] => problems.filter((p) => !p.startsWith('Failed to load resource'));

/** The enrolment page: the secret read from the page, a code from it, then the recovery codes kept for later. */
async function enrolMfa(page: Page, who: string, screenshot = false): Promise<void> {
  await page.waitForURL('**/mfa/setup');
  const secret = (await page.getByTestId('mfa-secret').textContent())?.trim() ?? '';
  expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
  await expect.poll(() => page.getByRole('img', { name: /QR code/ }).isVisible()).toBe(true);
  await expectAccessible(page, 'MFA enrolment');
  if (screenshot) await keepScreenshot(page, 'mfa-setup');
  await page.getByLabel('6-digit code from the app').fill(totp(secret));
  await page.getByRole('button', { name: 'Confirm' }).click();
  const codes = page.getByTestId('recovery-codes').locator('code');
  await codes.first().waitFor();
  recovery[who] = (await codes.allTextContents()).map((c) => c.trim());
  expect(recovery[who]).toHaveLength(8);
  await expectAccessible(page, 'recovery codes');
  if (screenshot) await keepScreenshot(page, 'recovery-codes');
  await page.getByRole('button', { name: 'I have saved them' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The MFA step of a sign-in, with one of the recovery codes the enrolment showed (each works once). */
async function secondFactor(page: Page, who: string, landing = 'Overview'): Promise<void> {
  await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
  await page.getByLabel(/Code from your authenticator app/).fill(recovery[who]!.shift()!);
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('heading', { name: landing }).waitFor();
}

/** A call of the console's JSON API. */
async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; data: T }> {
  const res = await fetch(`${system!.consoleUrl}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, data: (text ? (JSON.parse(text) as { data: T }).data : undefined) as T };
}

/** The admin's access token through the JSON API, passing MFA with one of the recovery codes the page showed. */
async function adminToken(): Promise<string> {
  const login = await call<{ mfa_token: string }>('POST', '/api/v1/auth/login', {
    email: adminEmail,
    password: adminPassword,
  });
  const verify = await call<{ access_token: string }>('POST', '/api/v1/auth/mfa/verify', {
    mfa_token: login.data.mfa_token,
    code: recovery.admin!.shift(),
  });
  expect(verify.status).toBe(200);
  return verify.data.access_token;
}

/**
 * This run's client (`web-<tag>`, created through the page), found through the API. The tests' database keeps other
 * runs' clients (thousands, after benches), so the newest come first and the pages are read until it shows.
 */
async function clientOfThisRun(token: string): Promise<{ id: string; slug: string }> {
  for (let page = 1; ; page++) {
    const clients = await call<{ id: string; slug: string }[]>(
      'GET',
      `/api/v1/clients?per_page=100&sort=created_at&order=desc&page=${page}`,
      undefined,
      token,
    );
    expect(clients.data.length, `client web-${tag} not found`).toBeGreaterThan(0);
    const mine = clients.data.find((c) => c.slug === `web-${tag}`);
    if (mine) return mine;
  }
}

describe('the web console in a browser', () => {
  it('the first sign-in enrols MFA from the page, the session survives a reload, sign-out ends it', async () => {
    const { context, page, problems } = await freshPage();
    try {
      await page.goto('/');
      await page.waitForURL('**/sign-in**');
      await expectAccessible(page, 'sign-in');
      await keepScreenshot(page, 'sign-in');

      // By keyboard alone: the first field has focus, Tab moves through the form, Enter submits.
      await page.keyboard.type(adminEmail);
      await page.keyboard.press('Tab');
      await page.keyboard.type('not the admin password');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Sign in');
      await page.keyboard.press('Enter');
      const alert = page.getByRole('alert');
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(/invalid e-mail or password.*request id/i);

      await signIn(page, adminEmail, adminPassword);
      await enrolMfa(page, 'admin', true);
      await expectAccessible(page, 'overview');

      // Page scripts never see the refresh token; the browser holds it httpOnly, SameSite=Strict, on its own path.
      expect(await page.evaluate(() => document.cookie)).not.toContain('svc_refresh');
      const cookies = await context.cookies();
      expect(cookies.find((c) => c.name === 'svc_refresh')).toMatchObject({
        httpOnly: true,
        sameSite: 'Strict',
        path: '/api/v1/auth/browser',
      });

      // A reload loses the in-memory access token; the cookie gives a new one.
      await page.reload();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      await page.getByRole('link', { name: 'Account' }).click();
      await page.getByRole('heading', { name: 'Sessions' }).waitFor();
      await page.getByText('this browser').waitFor();
      expect(await page.getByText(adminEmail).count()).toBeGreaterThan(0);
      await expectAccessible(page, 'account');
      await keepScreenshot(page, 'account');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL('**/sign-in**');
      await page.goto('/account');
      await page.waitForURL('**/sign-in**');

      // Signed in again: MFA is on now, a recovery code passes it, and the page asked for comes back.
      expect(new URL(page.url()).searchParams.get('next')).toBe('/account');
      await signIn(page, adminEmail, adminPassword);
      await secondFactor(page, 'admin', 'Your account');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('an invitation is accepted from its mail: the password policy shown as typed, its errors on the field', async () => {
    // The admin invites through the API (the console's administration pages come later).
    const invite = await call(
      'POST',
      '/api/v1/users',
      { email: inviteeEmail, display_name: 'Web Invitee' },
      await adminToken(),
    );
    expect(invite.status).toBe(201);
    // The link leads to the console itself: SVC_FRONTEND_URL defaults to its address.
    const link = await smtp.link(inviteeEmail, /http:\/\/localhost:\d+\/accept-invite\?token=[A-Za-z0-9_-]+/);
    expect(link.startsWith(`${system!.consoleUrl}/accept-invite?token=`)).toBe(true);

    const { context, page, problems } = await freshPage();
    try {
      await page.goto(link);
      await page.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
      const password = page.getByLabel('New password', { exact: true });
      await password.fill('too short');
      await page.getByText('(9 so far)').waitFor();
      await expectAccessible(page, 'accept invitation');
      await keepScreenshot(page, 'accept-invite');
      await page.getByRole('button', { name: 'Activate my account' }).click();
      await page.getByText('must be at least 12 characters').waitFor();
      expect(await password.getAttribute('aria-invalid')).toBe('true');

      await password.fill(inviteePassword);
      await page.getByText('At least 12 characters: met.').waitFor();
      await page.getByRole('button', { name: 'Activate my account' }).click();
      await enrolMfa(page, 'invitee');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a password is reset from its mail, then signs in', async () => {
    const { context, page, problems } = await freshPage();
    try {
      await page.goto('/sign-in');
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.getByLabel('E-mail').fill(inviteeEmail);
      await expectAccessible(page, 'forgot password');
      await page.getByRole('button', { name: 'Send the link' }).click();
      await page.getByRole('status').waitFor();

      const link = await smtp.link(inviteeEmail, /http:\/\/localhost:\d+\/reset-password\?token=[A-Za-z0-9_-]+/);
      await page.goto(link);
      await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
      await expectAccessible(page, 'reset password');
      const next = `a reset passphrase ${tag}`;
      await page.getByLabel('New password', { exact: true }).fill(next);
      await page.getByRole('button', { name: 'Set the password' }).click();
      await page.getByRole('status').waitFor();
      await page.getByRole('link', { name: 'Sign in' }).click();

      await signIn(page, inviteeEmail, next);
      await secondFactor(page, 'invitee');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('single sign-on from the sign-in page: a refusal at the provider is worded, a first sign-in enrols MFA, the next asks for a code', async () => {
    const account = { sub: `sub-${tag}`, email: `web-sso-${tag}@${ssoDomain}`, email_verified: true, hd: ssoDomain };
    const { context, page, problems } = await freshPage();
    try {
      await page.goto('/sign-in');
      const sso = page.getByRole('link', { name: 'Sign in with single sign-on' });
      // First, while the provider holds no session for this browser (later it signs in without asking).
      oidc.failNextWith('access_denied');
      await sso.click();
      await page.getByRole('alert').getByText('The identity provider did not allow the sign-in.').waitFor();
      expect(new URL(page.url()).pathname).toBe('/sign-in');
      await expectAccessible(page, 'sign-in, SSO refused');

      // The provider's consent is given at once; the browser goes there and back through real redirects.
      oidc.signInAs(account);
      await sso.click();
      await enrolMfa(page, 'sso');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();

      await sso.click();
      await secondFactor(page, 'sso');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a client, an environment and the enrol command; the agent’s host online with a CPU chart; PQL errors at their position; a note dragged on the chart in the timeline', async () => {
    const { context, page, problems } = await freshPage();
    try {
      await page.goto('/sign-in');
      await signIn(page, adminEmail, adminPassword);
      await secondFactor(page, 'admin');
      const client = page.getByRole('form', { name: 'New client' });
      await client.getByLabel('Client name').fill(`Web ${tag}`);
      await client.getByLabel('Client slug').fill(`web-${tag}`);
      await client.getByRole('button', { name: 'Create the client' }).click();
      const created = page.getByRole('region', { name: 'The client just created' });
      await created.getByText(`web-${tag}`).waitFor();
      const env = created.getByRole('form', { name: 'New environment' });
      await env.getByLabel('Environment name').fill('Production');
      await env.getByLabel('Environment slug').fill('prod');
      await env.getByRole('button', { name: 'Add the environment' }).click();
      await page.getByRole('button', { name: 'Enrol a host' }).click();
      const command = (await page.getByTestId('enrol-command').textContent()) ?? '';
      await expectAccessible(page, 'overview with the enrol command');
      await keepScreenshot(page, 'overview');
      const enrol = /svc-agent enroll --server (\S+) --token (\S+)/.exec(command);
      expect(enrol?.[1]).toBe(system!.consoleUrl);

      // The command's server and token, given to the reference agent from this checkout (the .deb's executable).
      agentDir = mkdtempSync(join(tmpdir(), 'web-agent-'));
      const enrolled = spawnGroup(
        process.execPath,
        ['agent/main.ts', 'enroll', '--server', enrol![1]!, '--token', enrol![2]!, '--state-dir', agentDir],
        brokerEnv(),
      );
      expect(await enrolled.exited, enrolled.output()).toBe(0);
      agent = spawnGroup(process.execPath, ['agent/main.ts', 'run', '--state-dir', agentDir, '--interval', '2'], {
        ...brokerEnv(),
        SVC_LOG_LEVEL: 'warn',
      });

      await page.getByRole('link', { name: 'Hosts' }).click();
      const search = page.getByLabel('Search hosts (PQL)');
      await search.fill(`host.client = "web-${tag}" AND host.agent_status = `);
      const error = page.getByTestId('pql-error');
      await error.waitFor();
      expect(await error.textContent()).toMatch(/expected a value after '=' at position \d+/);
      expect(await error.locator('mark').count()).toBe(1);
      await expectAccessible(page, 'hosts with a PQL error');
      await search.fill(`host.client = "web-${tag}" AND host.agent_status = "online"`);
      const row = page.getByTestId('hosts-scroller').getByRole('link');
      await waitFor(
        async () => {
          await page.getByRole('button', { name: 'Search' }).click();
          await page.waitForTimeout(500);
          return (await row.count()) === 1;
        },
        60_000,
        'the enrolled host online in the search',
        1000,
      );
      const saved = page.getByRole('button', { name: 'Save this search' });
      await saved.click();
      await page.getByLabel('Name of the search').fill(`online ${tag}`);
      await page.getByRole('form', { name: 'Save this search' }).getByRole('button', { name: 'Save' }).click();
      await page
        .getByRole('group', { name: 'Saved searches' })
        .getByRole('button', { name: `online ${tag}` })
        .waitFor();
      await keepScreenshot(page, 'hosts');
      await row.click();

      const cpu = page.getByTestId('chart-cpu_usage_percent');
      // The agent labels network counters by interface: the chart shows one of them, not an empty label set.
      const network = page.getByTestId('chart-network_receive_bytes_total');
      await waitFor(
        async () => {
          const points = [
            Number(await cpu.getAttribute('data-points')),
            Number(await network.getAttribute('data-points')),
          ];
          if (points.every((n) => n > 0)) return true;
          await page.getByRole('button', { name: '1h', exact: true }).click();
          return false;
        },
        90_000,
        'CPU and network buckets on the host charts',
        3000,
      );
      // The last click of the loop above asks for every chart again: the drag waits until they are drawn.
      await page.waitForLoadState('networkidle');
      await cpu.locator('.u-over').waitFor();
      await page.getByText(/Drag across a chart to add a note/).waitFor();
      const box = (await cpu.locator('.u-over').boundingBox())!;
      await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2, { steps: 8 });
      await page.mouse.up();
      const note = page.getByRole('form', { name: 'New note' });
      await note.getByLabel('Note').fill(`maintenance ${tag}`);
      await note.getByRole('button', { name: 'Add the note' }).click();
      await page.getByTestId('timeline').getByText(`maintenance ${tag}`).waitFor();
      // The inventory the agent's first snapshot sent, as the API lists it.
      await page.getByRole('tab', { name: 'processes' }).click();
      await page.getByRole('tabpanel', { name: 'processes' }).getByRole('table').waitFor({ timeout: 60_000 });
      await page.getByRole('tab', { name: 'packages' }).click();
      await page.getByRole('tabpanel', { name: 'packages' }).locator('table, p').first().waitFor();
      await page.getByText('No watch configuration set.').waitFor();
      // The user tags, edited on the page.
      await page.getByRole('button', { name: 'Edit tags' }).click();
      await page.getByRole('textbox', { name: /^Tags \(key=value/ }).fill('team=web, tier=gold');
      await page.getByRole('button', { name: 'Save the tags' }).click();
      await page.getByText('team=web, tier=gold').waitFor();
      await expectAccessible(page, 'host');
      await keepScreenshot(page, 'host-charts');
      // Back to the host from the list: its charts mount from the cache, data and marks in one pass.
      await page.getByRole('link', { name: 'Hosts', exact: true }).first().click();
      await page.getByLabel('Search hosts (PQL)').waitFor();
      await page.goBack();
      await cpu.locator('.u-over').waitFor();
      await page.waitForLoadState('networkidle');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);

  it('a user with a narrow role sees only its client and its hosts, and no action the role does not allow', async () => {
    const token = await adminToken();
    const mine = await clientOfThisRun(token);
    const other = await call<{ id: string }>(
      'POST',
      '/api/v1/clients',
      { name: `Other ${tag}`, slug: `other-${tag}` },
      token,
    );
    expect(other.status).toBe(201);
    const role = await call<{ id: string }>(
      'POST',
      '/api/v1/roles',
      {
        name: `viewer-${tag}`,
        permissions: ['clients:read', 'environments:read', 'hosts:read', 'search:read', 'metrics:read'],
      },
      token,
    );
    expect(role.status, JSON.stringify(role.data)).toBe(201);
    const email = `web-viewer-${tag}@example.com`;
    const user = await call<{ id: string }>('POST', '/api/v1/users', { email, display_name: 'Web Viewer' }, token);
    expect(user.status).toBe(201);
    expect(
      (
        await call(
          'POST',
          `/api/v1/users/${user.data.id}/clients`,
          { client_id: mine.id, role_id: role.data.id },
          token,
        )
      ).status,
    ).toBe(201);
    // The viewer's account through the API: the invitation accepted, MFA enrolled; the page is what is tested here.
    const link = await smtp.link(email, /accept-invite\?token=([A-Za-z0-9_-]+)/);
    const password = `viewer passphrase ${tag}`;
    const accepted = await call<{ access_token: string }>('POST', '/api/v1/auth/accept-invite', {
      token: link.split('token=')[1],
      password,
    });
    expect(accepted.status).toBe(200);
    const setup = await call<{ secret: string; recovery_codes: string[] }>(
      'POST',
      '/api/v1/auth/mfa/setup',
      {},
      accepted.data.access_token,
    );
    expect(
      (await call('POST', '/api/v1/auth/mfa/confirm', { code: totp(setup.data.secret) }, accepted.data.access_token))
        .status,
    ).toBe(200);
    recovery.viewer = setup.data.recovery_codes;

    const { context, page, problems } = await freshPage();
    try {
      await page.goto('/sign-in');
      await signIn(page, email, password);
      await secondFactor(page, 'viewer');
      const list = page.getByRole('list', { name: 'Clients' });
      await list.getByText(`web-${tag}`).waitFor();
      expect(await list.getByRole('listitem').count()).toBe(1);
      expect(await page.getByRole('form', { name: 'New client' }).count()).toBe(0);
      await list.getByText(`web-${tag}`).click();
      await page.getByRole('list', { name: 'Environments' }).getByText('prod', { exact: true }).waitFor();
      expect(await page.getByRole('button', { name: 'Enrol a host' }).count()).toBe(0);
      expect(await page.getByRole('form', { name: 'New environment' }).count()).toBe(0);

      await page.getByRole('link', { name: 'Hosts' }).click();
      const rows = page.getByTestId('hosts-scroller').getByRole('row');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(1);
      await page.getByTestId('hosts-scroller').getByRole('link').click();
      await page.getByRole('heading', { name: 'Charts' }).waitFor();
      await page.getByRole('heading', { name: 'Inventory' }).waitFor();
      expect(await page.getByRole('button', { name: 'Edit tags' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Revoke the agent' }).count()).toBe(0);
      // metrics:read without annotations:write: the charts, but no invitation to drag a note on them.
      expect(await page.getByText(/Drag across a chart/).count()).toBe(0);
      await expectAccessible(page, 'host, read only');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a notification’s acknowledgement link opens a page that acknowledges it with one press, without signing in', async () => {
    const token = await adminToken();
    const hooks = await new WebhookReceiver().start();
    try {
      const client = await call<{ id: string }>(
        'POST',
        '/api/v1/clients',
        { name: `Ack ${tag}`, slug: `ack-${tag}` },
        token,
      );
      expect(client.status).toBe(201);
      const channel = await call<{ id: string; secret: string }>(
        'POST',
        '/api/v1/notification-channels',
        { client_id: client.data.id, kind: 'webhook', name: 'on-call', url: `${hooks.url}/ack` },
        token,
      );
      expect(channel.status, JSON.stringify(channel.data)).toBe(201);
      hooks.secrets.set('/ack', channel.data.secret);
      const rule = await call(
        'POST',
        '/api/v1/notification-rules',
        {
          client_id: client.data.id,
          name: 'every alert',
          event: 'alert',
          steps: [{ after_minutes: 0, channel_ids: [channel.data.id] }],
        },
        token,
      );
      expect(rule.status, JSON.stringify(rule.data)).toBe(201);
      const source = await call<{ url: string }>(
        'POST',
        '/api/v1/alert-sources',
        { client_id: client.data.id, name: 'prometheus' },
        token,
      );
      const firing = readFileSync(join('test/fixtures/webhooks/alertmanager/firing.json'));
      expect(
        (
          await fetch(source.data.url.replace(/^https?:\/\/[^/]+/, system!.consoleUrl), {
            method: 'POST',
            body: firing,
            headers: { 'content-type': 'application/json' },
          })
        ).status,
      ).toBe(202);
      await waitFor(async () => hooks.on('/ack').length === 1, 30_000, 'the notification at the receiver', 250);
      const [hook] = hooks.on('/ack');
      expect(hook!.verified).toBe(true);
      const link = String(hook!.body.data.acknowledge_url);
      expect(link.startsWith(`${system!.consoleUrl}/notifications/acknowledge?token=`)).toBe(true);

      const { context, page, problems } = await freshPage();
      try {
        await page.goto(link);
        await page.getByRole('heading', { name: 'Acknowledge a notification' }).waitFor();
        await expectAccessible(page, 'acknowledge a notification');
        await keepScreenshot(page, 'acknowledge');
        // By keyboard, as from a mail client: Tab to the button, Enter.
        const button = page.getByRole('button', { name: 'Acknowledge' });
        for (let i = 0; i < 6 && !(await button.evaluate((b) => b === document.activeElement)); i++)
          await page.keyboard.press('Tab');
        expect(await button.evaluate((b) => b === document.activeElement)).toBe(true);
        await page.keyboard.press('Enter');
        await page
          .getByRole('status')
          .getByText(/^Acknowledged: Alert firing: HighCPULoad/)
          .waitFor();
        await page.reload();
        await page.getByRole('button', { name: 'Acknowledge' }).click();
        await page
          .getByRole('status')
          .getByText(/It was acknowledged already/)
          .waitFor();
        expect(realProblems(problems)).toEqual([]);
      } finally {
        await context.close();
      }
    } finally {
      await hooks.stop();
    }
  }, 120_000);

  it('the notifications page: a webhook channel with its secret shown once and a test delivered, an agent_offline rule on it, a one-off maintenance window with its occurrence', async () => {
    const hooks = await new WebhookReceiver().start();
    const { context, page, problems } = await freshPage();
    try {
      await page.goto('/sign-in');
      await signIn(page, adminEmail, adminPassword);
      await secondFactor(page, 'admin');
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Notifications' }).click();
      await page.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
      // Opened by the page's address, which keeps the chosen client: paging the picker through the tests' thousands
      // of kept clients would take the test's time.
      const mine = await clientOfThisRun(await adminToken());
      await page.goto(`/notifications?client=${mine.id}&tab=notifications`);
      await page.getByRole('tab', { name: 'Notifications', selected: true }).waitFor();
      await page.getByRole('tab', { name: 'Channels' }).click();
      const channelForm = page.getByRole('form', { name: 'New channel' });
      await channelForm.getByLabel('Kind').selectOption('webhook');
      await channelForm.getByLabel('Channel name').fill(`hook ${tag}`);
      await channelForm.getByLabel('Webhook URL').fill(`${hooks.url}/console`);
      await channelForm.getByRole('button', { name: 'Create the channel' }).click();
      const secretBox = page.getByRole('region', { name: 'Signing secret' });
      const secret = await secretBox.getByRole('textbox', { name: 'Signing secret' }).inputValue();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
      hooks.secrets.set('/console', secret);
      await expectAccessible(page, 'notifications, a webhook secret shown');
      await secretBox.getByRole('button', { name: 'I have stored it' }).click();
      await secretBox.waitFor({ state: 'detached' });
      const channel = page.getByRole('article', { name: `hook ${tag}` });
      await channel.getByText('Signing secret').waitFor();
      expect(await page.getByText(secret).count()).toBe(0);

      await channel.getByRole('button', { name: 'Send a test' }).click();
      await channel
        .getByRole('status')
        .getByText(/^Test delivery: delivered, HTTP 200/)
        .waitFor({ timeout: 60_000 });
      expect(hooks.on('/console')).toHaveLength(1);
      const [test] = hooks.on('/console');
      expect(test!.verified, test!.error ?? '').toBe(true);
      expect(test!.body.type).toBe('notification.test');
      await channel.getByText('Delivery log').click();
      const log = channel.getByRole('region', { name: `Deliveries of hook ${tag}` });
      await log.getByRole('row').filter({ hasText: 'delivered' }).filter({ hasText: 'HTTP 200' }).waitFor();

      // A rule for agents going offline, its one step on that channel.
      await page.getByRole('tab', { name: 'Rules' }).click();
      const ruleForm = page.getByRole('form', { name: 'New rule' });
      await ruleForm.getByLabel('Rule name').fill(`agents down ${tag}`);
      await ruleForm.getByLabel('Event', { exact: true }).selectOption('agent_offline');
      await ruleForm.getByLabel('Minutes offline before notifying').fill('10');
      await ruleForm
        .getByRole('group', { name: 'Channels of step 1' })
        .getByRole('checkbox', { name: `hook ${tag}` })
        .check();
      await ruleForm.getByRole('button', { name: 'Create the rule' }).click();
      const rule = page
        .getByRole('region', { name: 'Rules table' })
        .getByRole('row')
        .filter({ hasText: `agents down ${tag}` });
      // Its step names the channel once the channel list is there too.
      await rule.filter({ hasText: `at once: hook ${tag}` }).waitFor();
      expect(await rule.textContent()).toMatch(/Agent offline.*offline 10 min/);

      // By keyboard: an audit rule (client-wide, so no environment to choose), submitted with Enter.
      await ruleForm.getByLabel('Rule name').focus();
      await page.keyboard.type(`keys ${tag}`);
      await ruleForm.getByLabel('Event', { exact: true }).selectOption('audit');
      expect(await ruleForm.getByLabel('Environment').count()).toBe(0);
      await ruleForm.getByLabel('Audit actions').focus();
      await page.keyboard.type('service_account.key_created, user.super_admin_granted');
      await ruleForm
        .getByRole('group', { name: 'Channels of step 1' })
        .getByRole('checkbox', { name: `hook ${tag}` })
        .focus();
      await page.keyboard.press('Space');
      await ruleForm.getByLabel('Rule name').focus();
      await page.keyboard.press('Enter');
      const auditRule = page
        .getByRole('region', { name: 'Rules table' })
        .getByRole('row')
        .filter({ hasText: `keys ${tag}` });
      await auditRule.filter({ hasText: 'service_account.key_created, user.super_admin_granted' }).waitFor();
      await expectAccessible(page, 'notifications, rules');
      await keepScreenshot(page, 'notification-rules');

      // The tabs move with the arrow keys, and take the focus with them.
      await page.getByRole('tab', { name: 'Rules' }).focus();
      await page.keyboard.press('ArrowLeft');
      await page.getByRole('tab', { name: 'Channels', selected: true }).waitFor();
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Channels');
      await page.getByRole('tab', { name: 'Rules' }).click();

      // A one-off window tomorrow, in UTC: its one occurrence is listed in the next 30 days.
      await page.getByRole('tab', { name: 'Maintenance windows' }).click();
      const windowForm = page.getByRole('form', { name: 'New maintenance window' });
      const start = new Date(Date.now() + 86_400_000).toISOString().slice(0, 16);
      await windowForm.getByLabel('Window name').fill(`patching ${tag}`);
      await windowForm.getByLabel('Start (local time)').fill(start);
      await windowForm.getByLabel('Duration (minutes)').fill('90');
      await windowForm.getByLabel('Time zone', { exact: true }).selectOption('UTC');
      await windowForm.getByRole('button', { name: 'Create the window' }).click();
      const occurrences = page.getByRole('list', { name: `Next occurrences of patching ${tag}` }).getByRole('listitem');
      await occurrences.first().waitFor();
      expect(await occurrences.count()).toBe(1);
      expect(await occurrences.locator('time').first().getAttribute('datetime')).toBe(`${start}:00.000Z`);
      expect(await occurrences.locator('time').last().getAttribute('datetime')).toBe(
        new Date(Date.parse(`${start}:00Z`) + 90 * 60_000).toISOString(),
      );
      await expectAccessible(page, 'notifications, maintenance windows');
      await keepScreenshot(page, 'notifications');
      expect(realProblems(problems)).toEqual([]);
    } finally {
      await context.close();
      await hooks.stop();
    }
  }, 180_000);

  it('a link without its token says so, and an unknown address is the console’s own not-found page', async () => {
    const { context, page } = await freshPage();
    try {
      await page.goto('/reset-password');
      await page.getByRole('alert').waitFor();
      expect(await page.getByRole('alert').textContent()).toContain('no token');
      await page.goto('/no/such/page');
      await page.getByRole('heading', { name: 'Not found' }).waitFor();
      await expectAccessible(page, 'not found');
    } finally {
      await context.close();
    }
  }, 60_000);
});
