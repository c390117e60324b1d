import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { createClient, createUser } from '../support/identity.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem } from '../identity/admin-support.ts';

/**
 * Hardening through the console gateway: a NUL byte anywhere is a 400 naming the field, a whitespace-only e-mail on
 * forgot-password is a 400, and assigning a user to a client that is being deleted answers 404/409, never 500.
 */

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

describe('a NUL byte in a JSON string', () => {
  it('is refused with 400 naming the field, on every kind of route and request part', async () => {
    const call = api(sys, { token: root });
    const cases: [string, string, unknown, string][] = [
      ['POST', '/api/v1/teams', { name: 'a\u0000b' }, 'body.name: must not contain NUL characters'],
      ['POST', '/api/v1/clients', { name: 'x', slug: 'a\u0000b' }, 'body.slug: must not contain NUL characters'],
      [
        'POST',
        '/api/v1/roles',
        { name: 'r', permissions: ['users:read', 'x\u0000'] },
        'body.permissions.1: must not contain NUL characters',
      ],
      ['POST', '/api/v1/teams', { name: 'ok', ['k\u0000']: 1 }, 'body.k\\u0000: must not contain NUL characters'],
      ['GET', '/api/v1/users?page=1&search=a%00b', undefined, 'query.search: must not contain NUL characters'],
      ['GET', '/api/v1/users/a%00b', undefined, 'params.id: must not contain NUL characters'],
    ];
    for (const [method, url, payload, message] of cases) {
      const res = await call(method as 'GET' | 'POST', url, payload);
      expectStatus(res, 400);
      expect(errorOf(res)).toMatchObject({ code: 'bad_request', message });
    }
    const login = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: 'a\u0000@example.com', password: 'x' },
    });
    expectStatus(login, 400);
    expect(errorOf(login).message).toBe('body.email: must not contain NUL characters');
  });
});

describe('forgot-password', () => {
  it('refuses a whitespace-only e-mail with 400 (not 500) and still accepts a padded one', async () => {
    for (const email of [' ', '\t\n']) {
      const res = await sys.http({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email } });
      expectStatus(res, 400);
      expect(errorOf(res).message).toMatch(/^body\.email: /);
    }
    expectStatus(
      await sys.http({
        method: 'POST',
        url: '/api/v1/auth/forgot-password',
        payload: { email: '  Nobody@Example.com ' },
      }),
      200,
    );
  });
});

describe('assigning a user to a client being deleted', () => {
  it('answers 201, 404 or 409, never 500, over 30 races', async () => {
    const call = api(sys, { token: root });
    const viewer = roleIdByName('Viewer');
    const seen = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const [client, user] = await Promise.all([createClient(sys), createUser(sys)]);
      const [assign, remove] = await Promise.all([
        call('POST', `/api/v1/users/${user.id}/clients`, { client_id: client.id, role_id: viewer }),
        call('DELETE', `/api/v1/clients/${client.id}`),
      ]);
      const key = `${assign.statusCode}/${remove.statusCode}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      expect([201, 404, 409], `assign: ${assign.body}`).toContain(assign.statusCode);
      expect([204, 404, 409], `delete: ${remove.body}`).toContain(remove.statusCode);
      // The client vanished before the insert (the foreign key names it) or right after it (the cascade took the row).
      if (assign.statusCode === 404) expect(errorOf(assign).message).toMatch(/^(client|assignment) not found$/);
    }
    // Both orders happened at least once in most runs; the point is that none of them was a 500.
    expect([...seen.keys()].some((k) => k.startsWith('5') || k.endsWith('500'))).toBe(false);
  });
});
