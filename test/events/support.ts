import type { LightMyRequestResponse } from 'fastify';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { api, expectStatus, startAdminSystem, type AdminSystem } from '../identity/admin-support.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { assignRole, createUser, toPgArray, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';

/** Shared helpers of the events tests (test/events/*.test.ts). */

/** The public address the system believes it has (SVC_BACKEND_URL): receiver URLs and voice signatures use it. */
export const PUBLIC_URL = 'https://console.example.test';

/** Identity, fleet and events actors with the console gateway, and a signed-in super admin. */
export function startEventsSystem(overrides: Record<string, string> = {}): Promise<AdminSystem> {
  return startAdminSystem({ SVC_ACTORS: 'identity,fleet,events', SVC_BACKEND_URL: PUBLIC_URL, ...overrides });
}

export const fixture = (path: string): Buffer => readFileSync(join('test/fixtures/webhooks', path));

/** An environment of a client, inserted directly (test set-up; the API creates them in the fleet tests). */
export async function createEnvironment(sys: TestSystem, clientId: string, name = 'Production'): Promise<string> {
  const id = randomUUID();
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [
    id,
    clientId,
    name,
    `env-${id.slice(0, 8)}`,
  ]);
  return id;
}

/** A host of an environment, inserted directly. */
export async function createHost(
  sys: TestSystem,
  clientId: string,
  environmentId: string,
  hostname: string,
  ip = '',
): Promise<string> {
  const id = randomUUID();
  await sys.sql(`INSERT INTO hosts (id, environment_id, client_id, hostname, ip_address) VALUES (?, ?, ?, ?, ?)`, [
    id,
    environmentId,
    clientId,
    hostname,
    ip,
  ]);
  return id;
}

export const githubSignature = (secret: string, body: Buffer | string): string =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** POSTs raw bytes to a receiver, as the sending tool would. */
export function deliver(
  sys: TestSystem,
  url: string,
  body: Buffer | string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return sys.http({ method: 'POST', url, payload: body, headers: { 'content-type': 'application/json', ...headers } });
}

export interface IssuedReceiver {
  id: string;
  token: string;
  url: string;
  /** The URL's path, for inject. */
  path: string;
}

/** Creates a webhook endpoint or alert source through the API and returns its token and receiver path. */
export async function createReceiver(
  sys: TestSystem,
  token: string,
  kind: 'webhook-endpoints' | 'alert-sources',
  body: Record<string, unknown>,
): Promise<IssuedReceiver> {
  const res = await api(sys, { token })('POST', `/api/v1/${kind}`, body);
  expectStatus(res, 201);
  const data = res.json().data as { id: string; token: string; url: string };
  expect(data.url.startsWith(PUBLIC_URL)).toBe(true);
  return { id: data.id, token: data.token, url: data.url, path: data.url.slice(PUBLIC_URL.length) };
}

/** Polls `read` until `ok` holds (stores are written by consumers, after the 202). */
export async function eventually<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > until) expect.fail(`timed out waiting for ${what}: last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A custom role with exactly `permissions` (test set-up, inserted directly). */
export async function customRole(sys: TestSystem, permissions: string[]): Promise<string> {
  const id = randomUUID();
  await sys.sql(`INSERT INTO roles (id, name, description, permissions, is_system) VALUES (?, ?, '', ?, false)`, [
    id,
    `role-${id.slice(0, 8)}`,
    toPgArray(permissions),
  ]);
  return id;
}

/** A signed-in user holding `roleId` on `clientId`. */
export async function userWithRole(
  sys: TestSystem,
  roleId: string,
  clientId: string,
): Promise<{ id: string; token: string; email: string }> {
  const user = await createUser(sys);
  await assignRole(sys, user.id, clientId, roleId);
  return { id: user.id, email: user.email, token: await tokenFor(sys, user) };
}

/** A service account's API key with `roleName` on `clientId`. */
export async function apiKeyWith(
  sys: TestSystem,
  rootToken: string,
  roleId: string,
  clientId: string,
): Promise<string> {
  const res = await api(sys, { token: rootToken })('POST', '/api/v1/service-accounts', {
    name: `sa-${randomUUID().slice(0, 8)}`,
    description: '',
    role_id: roleId,
    client_scope: [clientId],
  });
  expectStatus(res, 201);
  return (res.json().data as { api_key: string }).api_key;
}

/**
 * A caller context with grants on single environments (`environments` of the access map). Identity issues none yet, so
 * tests of environment-scoped readers call the events subjects directly with such a context, signed like a gateway's.
 */
export function environmentScoped(
  user: { id: string; email: string },
  grants: Record<string, { client_id: string; permissions: string[] }>,
): CallerContext {
  return {
    request_id: randomUUID(),
    principal: {
      kind: 'user',
      user_id: user.id,
      session_id: randomUUID(),
      email: user.email,
      is_super_admin: false,
      mfa_enabled: true,
    },
    access: { super_admin: false, all_clients: [], clients: {}, environments: grants },
  };
}

/** The outcome of a direct call as an HTTP status, for the same assertions as the routes. */
export async function statusOfCall(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    const code = (err as { code?: string }).code;
    return (
      (
        { bad_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, conflict: 409 } as Record<string, number>
      )[code ?? ''] ?? 500
    );
  }
}
