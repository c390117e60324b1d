import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from './admin-support.ts';

let sys: TestSystem;
let sink: Server;
let root: string;
let rootId: string;

/** Rows straight from the database, for effects the API does not show (tokens, sessions). */
const rows = <T>(query: string, params: unknown[]): Promise<T[]> => sys.sql<T>(query, params);

beforeAll(async () => {
  // A configured hosted e-mail provider pointing at a local sink: admin password resets need a sender.
  sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'sink' }));
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const port = (sink.address() as AddressInfo).port;
  ({ sys, root, rootId } = await startAdminSystem({
    SVC_EMAIL_PROVIDER: 'resend',
    SVC_RESEND_API_KEY: 'test-key',
    SVC_RESEND_URL: `http://127.0.0.1:${port}`,
  }));
});

afterAll(async () => {
  await sys?.stop();
  await new Promise((r) => sink?.close(r));
});

describe('users', () => {
  it('creates an invited user with an invitation token, refuses duplicates and bad input', async () => {
    const email = `New.User-${sys.tag}@Example.com`;
    const res = await api(sys, { token: root })('POST', '/api/v1/users', { email, display_name: 'New User' });
    expectStatus(res, 201);
    const user = res.json().data;
    // The domain is lower-cased; the local part stays as given (RFC 5321 §2.4).
    expect(user).toMatchObject({
      email: `New.User-${sys.tag}@example.com`,
      display_name: 'New User',
      status: 'invited',
      is_super_admin: false,
      mfa_enabled: false,
      teams: [],
      clients: [],
    });
    expect(user.created_at).toMatch(/Z$/);
    const tokens = await rows<{ purpose: string; used_at: unknown }>(
      `SELECT purpose, used_at FROM one_time_tokens WHERE user_id = ?`,
      [user.id],
    );
    expect(tokens).toEqual([{ purpose: 'invite', used_at: null }]);

    // Same e-mail in another case: 409.
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/users', { email: email.toUpperCase(), display_name: 'Again' }),
      409,
    );
    const bad = await api(sys, { token: root })('POST', '/api/v1/users', { email: 'not-an-email', display_name: 'X' });
    expectStatus(bad, 400);
    expect(bad.json().error.message).toContain('body.email');
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/users', { email: `x-${sys.tag}@example.com`, display_name: '' }),
      400,
    );

    const entry = await waitForAudit(sys, root, { action: 'user.created', resource_id: user.id });
    expect(entry).toMatchObject({
      actor_id: rootId,
      resource_type: 'user',
      details: { email: `New.User-${sys.tag}@example.com` },
    });
  });

  it('lists users with pagination meta and validates the page query', async () => {
    const u = await createUser(sys);
    const res = await api(sys, { token: root })('GET', '/api/v1/users?per_page=5');
    expectStatus(res, 200);
    const body = res.json();
    expect(body.meta).toMatchObject({ page: 1, per_page: 5 });
    expect(body.meta.total).toBeGreaterThanOrEqual(2);
    expect(body.data.length).toBeLessThanOrEqual(5);
    expect(Object.keys(body.data[0]).sort()).toEqual([
      'created_at',
      'display_name',
      'email',
      'id',
      'is_super_admin',
      'last_login_at',
      'mfa_enabled',
      'status',
    ]);
    // Newest first: the user just created is on the first page.
    expect(body.data.map((x: { id: string }) => x.id)).toContain(u.id);
    expectStatus(await api(sys, { token: root })('GET', '/api/v1/users?per_page=101'), 400);
    expectStatus(await api(sys, { token: root })('GET', '/api/v1/users?page=0'), 400);
    const page2 = await api(sys, { token: root })('GET', '/api/v1/users?per_page=1&page=2');
    expectStatus(page2, 200);
    expect(page2.json().meta).toMatchObject({ page: 2, per_page: 1 });
  });

  it('shows the detail with teams and direct client assignments; 404 and 400 for unknown or malformed ids', async () => {
    const u = await createUser(sys);
    const client = await createClient(sys);
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/users/${u.id}/clients`, {
        client_id: client.id,
        role_id: roleIdByName('Viewer'),
      }),
      201,
    );
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `Detail team ${sys.tag}`, description: 'd' })
    ).json().data;
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
        user_id: u.id,
        role_id: roleIdByName('Engineer'),
      }),
      201,
    );
    const res = await api(sys, { token: root })('GET', `/api/v1/users/${u.id}`);
    expectStatus(res, 200);
    expect(res.json().data).toMatchObject({
      id: u.id,
      email: u.email,
      status: 'active',
      teams: [{ team_id: team.id, team_name: team.name, role_id: roleIdByName('Engineer'), role_name: 'Engineer' }],
      clients: [
        {
          client_id: client.id,
          client_name: client.name,
          client_slug: client.slug,
          role_id: roleIdByName('Viewer'),
          role_name: 'Viewer',
        },
      ],
    });
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/users/${crypto.randomUUID()}`), 404);
    expectStatus(await api(sys, { token: root })('GET', '/api/v1/users/not-a-uuid'), 400);
  });

  it('updates display name; only super admins change is_super_admin; status moves are checked', async () => {
    const u = await createUser(sys);
    const client = await createClient(sys);
    const admin = await userWith(sys, 'Admin', client.id);
    const put = (token: string, body: unknown) => api(sys, { token })('PUT', `/api/v1/users/${u.id}`, body);

    const renamed = await put(admin.token, { display_name: 'Renamed' });
    expectStatus(renamed, 200);
    expect(renamed.json().data.display_name).toBe('Renamed');
    expectStatus(await put(admin.token, {}), 400);
    expectStatus(await put(admin.token, { is_super_admin: true }), 403);
    expectStatus(await put(admin.token, { status: 'invited' }), 400);

    const promoted = await put(root, { is_super_admin: true });
    expectStatus(promoted, 200);
    expect(promoted.json().data.is_super_admin).toBe(true);
    // A non-super-admin cannot change a super admin's status.
    expectStatus(await put(admin.token, { status: 'disabled' }), 403);
    // Nobody revokes their own flag or disables themselves.
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/users/${rootId}`, { is_super_admin: false }), 409);
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/users/${rootId}`, { status: 'disabled' }), 409);

    // active → disabled → active
    const token = await tokenFor(sys, u);
    expectStatus(await api(sys, { token })('GET', '/api/v1/permissions'), 200);
    expectStatus(await put(root, { status: 'disabled' }), 200);
    expectStatus(await api(sys, { token })('GET', '/api/v1/permissions'), 401);
    const enabled = await put(root, { status: 'active' });
    expectStatus(enabled, 200);
    expect(enabled.json().data.status).toBe('active');
    expectStatus(await api(sys, { token: await tokenFor(sys, u) })('GET', '/api/v1/permissions'), 200);

    // An invited user becomes active only by accepting the invitation.
    const invited = await createUser(sys, { status: 'invited' });
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/users/${invited.id}`, { status: 'active' }), 409);

    const entry = await waitForAudit(sys, root, { action: 'user.updated', resource_id: u.id }, (e) =>
      JSON.stringify(e.details).includes('Renamed'),
    );
    expect(entry.details).toMatchObject({ changes: { display_name: { to: 'Renamed' } } });
  });

  it('DELETE disables the user, revokes every session and drops cached access at once', async () => {
    const u = await createUser(sys);
    const token = await tokenFor(sys, u);
    await tokenFor(sys, u);
    expectStatus(await api(sys, { token })('GET', '/api/v1/permissions'), 200);

    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/users/${u.id}`), 204);
    const detail = await api(sys, { token: root })('GET', `/api/v1/users/${u.id}`);
    expect(detail.json().data.status).toBe('disabled');
    const sessions = await rows<{ is_revoked: boolean }>(`SELECT is_revoked FROM sessions WHERE user_id = ?`, [u.id]);
    expect(sessions.length).toBe(2);
    expect(sessions.every((s) => s.is_revoked)).toBe(true);
    // The cached "active" status is gone: the very next request is refused.
    expectStatus(await api(sys, { token })('GET', '/api/v1/permissions'), 401);

    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/users/${rootId}`), 409);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/users/${crypto.randomUUID()}`), 404);
    await waitForAudit(sys, root, { action: 'user.disabled', resource_id: u.id });
  });

  it('resends invitations only to invited users, replacing the old token', async () => {
    const created = (
      await api(sys, { token: root })('POST', '/api/v1/users', {
        email: `resend-${sys.tag}@example.com`,
        display_name: 'Resend',
      })
    ).json().data;
    const [before] = await rows<{ token_hash: string }>(
      `SELECT token_hash FROM one_time_tokens WHERE user_id = ? AND purpose = 'invite'`,
      [created.id],
    );
    const res = await api(sys, { token: root })('POST', `/api/v1/users/${created.id}/resend-invite`);
    expectStatus(res, 200);
    expect(res.json().data.message).toBeTypeOf('string');
    const after = await rows<{ token_hash: string }>(
      `SELECT token_hash FROM one_time_tokens WHERE user_id = ? AND purpose = 'invite' AND used_at IS NULL`,
      [created.id],
    );
    expect(after.length).toBe(1);
    expect(after[0]?.token_hash).not.toBe(before?.token_hash);

    const active = await createUser(sys);
    expectStatus(await api(sys, { token: root })('POST', `/api/v1/users/${active.id}/resend-invite`), 409);
    await waitForAudit(sys, root, { action: 'user.invite_resent', resource_id: created.id });
  });

  it('creates a password-reset token for active users when an e-mail sender is configured', async () => {
    const u = await createUser(sys);
    const res = await api(sys, { token: root })('POST', `/api/v1/users/${u.id}/reset-password`);
    expectStatus(res, 200);
    const tokens = await rows<{ expires_at: string }>(
      `SELECT expires_at FROM one_time_tokens WHERE user_id = ? AND purpose = 'reset' AND used_at IS NULL`,
      [u.id],
    );
    expect(tokens.length).toBe(1);
    const invited = await createUser(sys, { status: 'invited' });
    expectStatus(await api(sys, { token: root })('POST', `/api/v1/users/${invited.id}/reset-password`), 409);
    await waitForAudit(sys, root, { action: 'user.password_reset_requested', resource_id: u.id });
  });
});

describe('reach of a scoped administrator', () => {
  it('an Admin of client A cannot rename, disable, reset or re-invite accounts that reach client B', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const admin = await userWith(sys, 'Admin', a.id);
    const call = api(sys, { token: admin.token });
    const theirs = await createUser(sys);
    await assignRole(sys, theirs.id, b.id, roleIdByName('Viewer'));
    // Reaching A and B: still out of reach, B is not the Admin's.
    const both = await createUser(sys);
    await assignRole(sys, both.id, a.id, roleIdByName('Viewer'));
    await assignRole(sys, both.id, b.id, roleIdByName('Viewer'));
    // Reaching B through a team only.
    const member = await createUser(sys);
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `Reach team ${sys.tag}`, description: '' })
    ).json().data;
    expectStatus(await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: b.id }), 201);
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
        user_id: member.id,
        role_id: roleIdByName('Viewer'),
      }),
      201,
    );
    const invitedOnB = await createUser(sys, { status: 'invited' });
    await assignRole(sys, invitedOnB.id, b.id, roleIdByName('Viewer'));
    const boss = await createUser(sys, { superAdmin: true });

    for (const target of [theirs, both, member, boss]) {
      expectStatus(await call('PUT', `/api/v1/users/${target.id}`, { display_name: 'Hijacked' }), 403);
      expectStatus(await call('PUT', `/api/v1/users/${target.id}`, { status: 'disabled' }), 403);
      expectStatus(await call('DELETE', `/api/v1/users/${target.id}`), 403);
      expectStatus(await call('POST', `/api/v1/users/${target.id}/reset-password`), 403);
      const detail = (await api(sys, { token: root })('GET', `/api/v1/users/${target.id}`)).json().data;
      expect(detail).toMatchObject({ status: 'active' });
      expect(detail.display_name).not.toBe('Hijacked');
    }
    expectStatus(await call('POST', `/api/v1/users/${invitedOnB.id}/resend-invite`), 403);
    // No reset link was made for them.
    expect(
      await rows(`SELECT id FROM one_time_tokens WHERE user_id = ? AND purpose = 'reset'`, [theirs.id]),
    ).toHaveLength(0);

    // Accounts within the Admin's reach (on A only, or on no client yet) remain manageable.
    const ours = await createUser(sys);
    await assignRole(sys, ours.id, a.id, roleIdByName('Viewer'));
    expectStatus(await call('PUT', `/api/v1/users/${ours.id}`, { display_name: 'Renamed by A' }), 200);
    expectStatus(await call('POST', `/api/v1/users/${ours.id}/reset-password`), 200);
    expectStatus(await call('DELETE', `/api/v1/users/${ours.id}`), 204);
    const fresh = await createUser(sys);
    expectStatus(await call('DELETE', `/api/v1/users/${fresh.id}`), 204);
  });
});

describe('secrets', () => {
  const SECRET_FIELDS = [
    'password_hash',
    'api_key_hash',
    'mfa_secret_enc',
    'token_hash',
    'code_hash',
    'has_password',
    '$argon2',
  ];

  it('no response carries a password hash, key hash, MFA secret or token hash', async () => {
    const client = await createClient(sys);
    const u = await createUser(sys);
    await assignRole(sys, u.id, client.id, roleIdByName('Viewer'));
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `Secrets team ${sys.tag}`, description: '' })
    ).json().data;
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
      user_id: u.id,
      role_id: roleIdByName('Viewer'),
    });
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: client.id });
    await api(sys, { token: root })('POST', `/api/v1/users/${u.id}/reset-password`);
    const created = await api(sys, { token: root })('POST', '/api/v1/service-accounts', {
      name: `secret-sa-${sys.tag}`,
      description: '',
      role_id: roleIdByName('Viewer'),
      client_scope: [client.id],
    });
    expectStatus(created, 201);
    const sa = created.json().data as { id: string; api_key: string };
    const userToken = await tokenFor(sys, u);
    const [stored] = await rows<{ password_hash: string; mfa_secret_enc: string }>(
      `SELECT password_hash, mfa_secret_enc FROM users WHERE id = ?`,
      [u.id],
    );
    const [keyRow] = await rows<{ api_key_hash: string }>(`SELECT api_key_hash FROM service_accounts WHERE id = ?`, [
      sa.id,
    ]);
    const tokenHashes = (
      await rows<{ token_hash: string }>(`SELECT token_hash FROM one_time_tokens WHERE user_id = ?`, [u.id])
    ).map((r) => r.token_hash);
    const secretValues = [stored!.password_hash, stored!.mfa_secret_enc, keyRow!.api_key_hash, ...tokenHashes];

    await waitForAudit(sys, root, { action: 'service_account.created', resource_id: sa.id });
    const reads: [string, string][] = [
      [root, '/api/v1/users?per_page=100'],
      [root, `/api/v1/users/${u.id}`],
      [root, `/api/v1/users/${u.id}/clients`],
      [root, '/api/v1/teams?per_page=100'],
      [root, `/api/v1/teams/${team.id}`],
      [root, `/api/v1/roles/${roleIdByName('Viewer')}/usage`],
      [root, '/api/v1/service-accounts?per_page=100'],
      [root, `/api/v1/service-accounts/${sa.id}`],
      [root, `/api/v1/admin/access-audit/by-user/${u.id}`],
      [root, `/api/v1/admin/access-audit/by-client/${client.id}`],
      [root, '/api/v1/audit-log?per_page=100'],
      [userToken, '/api/v1/auth/me'],
      [userToken, '/api/v1/auth/sessions'],
    ];
    for (const [token, url] of reads) {
      const res = await api(sys, { token })('GET', url);
      expectStatus(res, 200);
      for (const field of SECRET_FIELDS) expect(res.body, `${url} shows ${field}`).not.toContain(field);
      for (const value of secretValues) expect(res.body, `${url} shows a stored secret`).not.toContain(value);
      expect(res.body, `${url} shows the API key`).not.toContain(sa.api_key);
    }
    // The key itself is in the creation response only, never its hash.
    for (const field of SECRET_FIELDS) expect(created.body).not.toContain(field);
    expect(created.body).not.toContain(keyRow!.api_key_hash);
  });
});

describe('direct client assignments', () => {
  it('assigns, lists, changes and removes; the user sees each change on the next request', async () => {
    const u = await createUser(sys);
    const token = await tokenFor(sys, u);
    const client = await createClient(sys);
    const call = api(sys, { token: root });
    const asUser = api(sys, { token });

    expectStatus(await asUser('GET', '/api/v1/clients'), 403); // caches an access map without the client
    const created = await call('POST', `/api/v1/users/${u.id}/clients`, {
      client_id: client.id,
      role_id: roleIdByName('Viewer'),
    });
    expectStatus(created, 201);
    expect(created.json().data).toMatchObject({
      client_id: client.id,
      client_name: client.name,
      client_slug: client.slug,
      role_id: roleIdByName('Viewer'),
      role_name: 'Viewer',
    });
    expectStatus(
      await call('POST', `/api/v1/users/${u.id}/clients`, { client_id: client.id, role_id: roleIdByName('Viewer') }),
      409,
    );
    expectStatus(await asUser('GET', '/api/v1/clients'), 403); // Viewer has no clients:read

    const changed = await call('PUT', `/api/v1/users/${u.id}/clients/${client.id}`, {
      role_id: roleIdByName('Executive'),
    });
    expectStatus(changed, 200);
    expect(changed.json().data.role_name).toBe('Executive');
    const visible = await asUser('GET', '/api/v1/clients');
    expectStatus(visible, 200);
    expect(visible.json().data.map((c: { id: string }) => c.id)).toEqual([client.id]);

    const list = await call('GET', `/api/v1/users/${u.id}/clients`);
    expectStatus(list, 200);
    expect(list.json().data).toHaveLength(1);

    expectStatus(await call('DELETE', `/api/v1/users/${u.id}/clients/${client.id}`), 204);
    expectStatus(await asUser('GET', '/api/v1/clients'), 403);
    expectStatus(await call('DELETE', `/api/v1/users/${u.id}/clients/${client.id}`), 404);
    expectStatus(
      await call('PUT', `/api/v1/users/${u.id}/clients/${client.id}`, { role_id: roleIdByName('Viewer') }),
      404,
    );

    for (const action of ['user.client.assigned', 'user.client.updated', 'user.client.removed']) {
      const e = await waitForAudit(sys, root, { action, resource_id: u.id });
      expect(e.details).toMatchObject({ client_id: client.id });
    }
  });

  it('answers 404 for unknown users, clients and roles, 400 for malformed bodies', async () => {
    const u = await createUser(sys);
    const client = await createClient(sys);
    const call = api(sys, { token: root });
    expectStatus(
      await call('POST', `/api/v1/users/${u.id}/clients`, {
        client_id: crypto.randomUUID(),
        role_id: roleIdByName('Viewer'),
      }),
      404,
    );
    expectStatus(
      await call('POST', `/api/v1/users/${u.id}/clients`, { client_id: client.id, role_id: crypto.randomUUID() }),
      404,
    );
    expectStatus(
      await call('POST', `/api/v1/users/${crypto.randomUUID()}/clients`, {
        client_id: client.id,
        role_id: roleIdByName('Viewer'),
      }),
      404,
    );
    expectStatus(await call('GET', `/api/v1/users/${crypto.randomUUID()}/clients`), 404);
    const bad = await call('POST', `/api/v1/users/${u.id}/clients`, { client_id: 'x' });
    expectStatus(bad, 400);
    expect(bad.json().error.message).toMatch(/body\.(client_id|role_id)/);
  });

  it('is scoped to the caller’s clients and cannot grant more than the caller holds', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const admin = await userWith(sys, 'Admin', a.id);
    const u = await createUser(sys);
    const call = api(sys, { token: admin.token });
    // On another client: no users:write there.
    expectStatus(
      await call('POST', `/api/v1/users/${u.id}/clients`, { client_id: b.id, role_id: roleIdByName('Viewer') }),
      403,
    );
    // Super Admin role carries roles:write etc. that an Admin does not hold: refused.
    expectStatus(
      await call('POST', `/api/v1/users/${u.id}/clients`, { client_id: a.id, role_id: roleIdByName('Super Admin') }),
      403,
    );
    expectStatus(
      await call('POST', `/api/v1/users/${u.id}/clients`, { client_id: a.id, role_id: roleIdByName('Engineer') }),
      201,
    );
    expectStatus(
      await call('PUT', `/api/v1/users/${u.id}/clients/${a.id}`, { role_id: roleIdByName('Super Admin') }),
      403,
    );

    // The caller's own view of the user's assignments leaves out clients it cannot see.
    await api(sys, { token: root })('POST', `/api/v1/users/${u.id}/clients`, {
      client_id: b.id,
      role_id: roleIdByName('Viewer'),
    });
    const list = await call('GET', `/api/v1/users/${u.id}/clients`);
    expectStatus(list, 200);
    expect(list.json().data.map((x: { client_id: string }) => x.client_id)).toEqual([a.id]);
    const detail = await call('GET', `/api/v1/users/${u.id}`);
    expect(detail.json().data.clients.map((x: { client_id: string }) => x.client_id)).toEqual([a.id]);
    expectStatus(await call('DELETE', `/api/v1/users/${u.id}/clients/${b.id}`), 403);
  });
});
