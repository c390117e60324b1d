import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, userWith } from '../identity/admin-support.ts';
import { apiKeyWith, customRole, userWithRole } from '../events/support.ts';
import { createClient } from '../support/identity.ts';
import { errorOf, startTestSystem, type TestSystem } from '../support/system.ts';
import { SD } from './support.ts';

/**
 * A service desk whose tracker is not configured: authorization comes before availability. A caller without the
 * route's permission gets 401/403 as on a configured system; only a caller allowed to use the route learns (503) that
 * the deployment lacks the tracker settings.
 */

let sys: TestSystem;
let root: string;
let clientId: string;

/** One route per kind (read store, proxy, organization mappings, sync) with the permission it needs. */
const ROUTES: { method: 'GET' | 'POST'; url: string; body?: Record<string, unknown>; permission: string }[] = [
  { method: 'GET', url: `${SD}/tickets`, permission: 'servicedesk:read' },
  { method: 'GET', url: `${SD}/metrics/summary`, permission: 'servicedesk:read' },
  { method: 'GET', url: `${SD}/tickets/SUP-1/comments`, permission: 'servicedesk:read' },
  { method: 'POST', url: `${SD}/tickets/SUP-1/comments`, body: { body: 'hello' }, permission: 'servicedesk:write' },
  { method: 'GET', url: `${SD}/admin/organizations`, permission: 'servicedeskconfig:read' },
  { method: 'POST', url: `${SD}/admin/sync`, permission: 'servicedeskconfig:write' },
];

const send = (who: { token?: string; apiKey?: string }, r: (typeof ROUTES)[number]): Promise<LightMyRequestResponse> =>
  api(sys, who)(r.method, r.url, r.body);

beforeAll(async () => {
  sys = await startTestSystem({
    SVC_ACTORS: 'identity,fleet,servicedesk',
    SVC_SD_BASE_URL: '',
    SVC_SD_EMAIL: '',
    SVC_SD_API_TOKEN: '',
  });
  root = (await userWith(sys)).token;
  clientId = (await createClient(sys)).id;
});
afterAll(() => sys?.stop());

describe('service desk not configured', () => {
  it('answers 401 without credentials', async () => {
    for (const r of ROUTES) {
      const res = await sys.http({ method: r.method, url: r.url, ...(r.body ? { payload: r.body } : {}) });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(401);
    }
  });

  it('answers 403 to an API key without any servicedesk permission, never telling how the deployment is configured', async () => {
    const apiKey = await apiKeyWith(sys, root, await customRole(sys, ['clients:read', 'roles:read']), clientId);
    for (const r of ROUTES) {
      const res = await send({ apiKey }, r);
      expect(res.statusCode, `${r.method} ${r.url}: ${res.body}`).toBe(403);
      expect(errorOf(res).message).toContain(r.permission);
      expect(res.body).not.toMatch(/configured|SVC_SD_/);
    }
  });

  it('answers 403 on the routes a caller may not use and 503 on those it may', async () => {
    const reader = await userWithRole(sys, await customRole(sys, ['servicedesk:read']), clientId);
    for (const r of ROUTES) {
      const res = await send({ token: reader.token }, r);
      const allowed = r.permission === 'servicedesk:read';
      expect(res.statusCode, `${r.method} ${r.url}: ${res.body}`).toBe(allowed ? 503 : 403);
      if (allowed) expect(errorOf(res).message).toContain('the service desk is not configured');
    }
  });

  it('answers 503 naming the variables to a super admin on every route', async () => {
    for (const r of ROUTES) {
      const res = await send({ token: root }, r);
      expect(res.statusCode, `${r.method} ${r.url}: ${res.body}`).toBe(503);
      expect(errorOf(res).message).toContain('SVC_SD_BASE_URL');
    }
  });
});
