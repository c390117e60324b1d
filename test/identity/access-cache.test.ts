import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AccessResolver } from '../../actors/identity/access.ts';
import type { NearCache } from '../../platform/stores/kv-near-cache.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ SVC_ACTORS: 'identity,fleet' });
});
afterAll(async () => {
  await sys.stop();
});

describe('access cache read by the gateway', () => {
  it('fills on first use, serves from the cache, and treats an unreadable entry as a miss', async () => {
    const user = await createUser(sys);
    const client = await createClient(sys);
    await assignRole(sys, user.id, client.id, roleIdByName('Viewer'));
    const token = await tokenFor(sys, user);
    const kv = await sys.stores.kv();
    const key = `access:user:${user.id}`;

    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/me', token })).json().data.client_access).toEqual({
      [client.id]: ['healthcheck:read', 'hosts:read', 'metrics:read'],
    });
    expect(await kv.get(key)).toContain(client.id);

    // Garbage in the cache must neither fail the request nor be trusted: the resolver recomputes and refills.
    await kv.set(key, '{"not":"an access entry"', { ttlMs: 60_000 });
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token });
    expect(me.statusCode).toBe(200);
    expect(me.json().data.client_access[client.id]).toContain('hosts:read');
    expect(JSON.parse((await kv.get(key))!)).toMatchObject({ user_id: user.id });
  });

  it('removes a stale entry written just after an invalidation (delayed double delete)', async () => {
    const user = await createUser(sys);
    const client = await createClient(sys);
    const token = await tokenFor(sys, user);
    const kv = await sys.stores.kv();
    const key = `access:user:${user.id}`;
    const before = (await sys.http({ method: 'GET', url: '/api/v1/auth/me', token })).json().data.client_access;
    expect(before).toEqual({});
    const stale = await kv.get(key);
    // A role is granted; meanwhile a slow resolution that read the database earlier writes its old result back.
    await assignRole(sys, user.id, client.id, roleIdByName('Engineer'));
    const orm = await sys.stores.orm();
    await new AccessResolver(() => orm.em.fork(), kv, sys.clock).invalidateUsers([user.id]);
    await kv.set(key, stale!, { ttlMs: 60_000 });
    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/me', token })).json().data.client_access).toEqual({});
    // The second delete comes INVALIDATE_AGAIN_MS (1.5 s) later, and its announcement reaches the gateway's near cache
    // a moment after that: waited for, not slept for, so a loaded machine cannot make it look stale.
    await vi.waitFor(
      async () =>
        expect(
          (await sys.http({ method: 'GET', url: '/api/v1/auth/me', token })).json().data.client_access[client.id],
        ).toContain('hosts:write'),
      { timeout: 10_000, interval: 100 },
    );
  });

  it('sees a disabled account at once although its entry was cached', async () => {
    const user = await createUser(sys);
    const token = await tokenFor(sys, user);
    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/me', token })).statusCode).toBe(200);
    const admin = await createUser(sys, { superAdmin: true });
    const adminToken = await tokenFor(sys, admin);
    expect((await sys.http({ method: 'DELETE', url: `/api/v1/users/${user.id}`, token: adminToken })).statusCode).toBe(
      204,
    );
    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/me', token })).statusCode).toBe(401);
  });
});

describe('access resolution', () => {
  it('answers a warm resolution from the near cache, and the resolution right after a change sees the change', async () => {
    const user = await createUser(sys);
    const client = await createClient(sys);
    await assignRole(sys, user.id, client.id, roleIdByName('Viewer'));
    const admin = await createUser(sys, { superAdmin: true });
    const adminToken = await tokenFor(sys, admin);
    const near = (await sys.stores.kvReads()) as NearCache;
    expect(near.tracking).toBe(true);
    const resolve = () =>
      sys.caller.call('svc.identity.access.resolve', { user_id: user.id }, anonymousContext(randomUUID()));

    expect((await resolve()).access.clients[client.id]).toEqual(['healthcheck:read', 'hosts:read', 'metrics:read']);
    await resolve(); // the entry written by the first one is read from Valkey once, then kept
    const misses = near.stats.misses;
    const hits = near.stats.hits;
    for (let i = 0; i < 5; i++) await resolve();
    expect(near.stats.misses).toBe(misses);
    expect(near.stats.hits).toBe(hits + 5);

    // The change's reply waits until this process's near cache has dropped the old entry. Valkey's announcement is
    // held back here (its socket paused, as a busy event loop or a slow network would): the change must not answer
    // before it is applied, and the resolution right after the answer sees the change, with no wait and no retry.
    const other = await createClient(sys);
    const announcements = (near as unknown as { announcements: Redis }).announcements.stream;
    announcements.pause();
    let answered = false;
    const assigned = sys
      .http({
        method: 'POST',
        url: `/api/v1/users/${user.id}/clients`,
        token: adminToken,
        payload: { client_id: other.id, role_id: roleIdByName('Engineer') },
      })
      .finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(answered).toBe(false);
    announcements.resume();
    expect((await assigned).statusCode).toBe(201);
    expect((await resolve()).access.clients[other.id]).toContain('hosts:write');
  });
});
