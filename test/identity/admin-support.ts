import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { z } from 'zod';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import type { AuditLogEntry } from '../../contracts/domains/identity-admin.ts';
import { assignRole, createUser, tokenFor, type TestUser } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/** Shared helpers of the administration tests (test/identity/admin-*.test.ts, permission-matrix, fleet clients). */

/** What every administration test file starts with: identity and fleet actors, and a signed-in super admin. */
export interface AdminSystem {
  sys: TestSystem;
  /** Access token of the super admin. */
  root: string;
  rootId: string;
}

/** Starts the system for an administration test file (call once, in `beforeAll`; stop `sys` in `afterAll`). */
export async function startAdminSystem(
  overrides: Record<string, string | undefined> = {},
  opts: Parameters<typeof startTestSystem>[1] = {},
): Promise<AdminSystem> {
  const sys = await startTestSystem({ SVC_ACTORS: 'identity,fleet', ...overrides }, opts);
  const admin = await userWith(sys);
  return { sys, root: admin.token, rootId: admin.user.id };
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Caller {
  token?: string;
  apiKey?: string;
}

export function api(sys: TestSystem, who: Caller) {
  return (method: Method, url: string, payload?: unknown): Promise<LightMyRequestResponse> =>
    sys.http({
      method,
      url,
      ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}),
      ...(who.token ? { token: who.token } : {}),
      ...(who.apiKey ? { apiKey: who.apiKey } : {}),
    });
}

/** A signed-in user with `roleName` directly on `clientId` (or a super admin when roleName is omitted). */
export async function userWith(
  sys: TestSystem,
  roleName?: string,
  clientId?: string,
): Promise<{ user: TestUser; token: string }> {
  const user = await createUser(sys, { superAdmin: roleName === undefined });
  if (roleName !== undefined && clientId !== undefined)
    await assignRole(sys, user.id, clientId, roleIdByName(roleName));
  return { user, token: await tokenFor(sys, user) };
}

export function expectStatus(res: LightMyRequestResponse, status: number): void {
  if (res.statusCode !== status) expect.fail(`expected ${status}, got ${res.statusCode}: ${res.body}`);
}

/** One entry of GET /api/v1/audit-log, as the contract describes it. */
export type AuditRow = z.output<typeof AuditLogEntry>;

/** Audit entries are stored asynchronously from the event stream: poll the audit log until `match` finds one. */
export async function waitForAudit(
  sys: TestSystem,
  token: string,
  query: Record<string, string>,
  match: (e: AuditRow) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<AuditRow> {
  const qs = new URLSearchParams({ per_page: '100', ...query }).toString();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await sys.http({ method: 'GET', url: `/api/v1/audit-log?${qs}`, token });
    expectStatus(res, 200);
    const found = (res.json() as { data: AuditRow[] }).data.find(match);
    if (found) return found;
    if (Date.now() > deadline) expect.fail(`no audit entry for ${qs} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
