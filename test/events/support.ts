import type { LightMyRequestResponse } from 'fastify';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { api, expectStatus, startAdminSystem, type AdminSystem } from '../identity/admin-support.ts';
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
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [id, clientId, name, `env-${id.slice(0, 8)}`]);
  return id;
}

/** A host of an environment, inserted directly. */
export async function createHost(sys: TestSystem, clientId: string, environmentId: string, hostname: string, ip = ''): Promise<string> {
  const id = randomUUID();
  await sys.sql(`INSERT INTO hosts (id, environment_id, client_id, hostname, ip_address) VALUES (?, ?, ?, ?, ?)`, [id, environmentId, clientId, hostname, ip]);
  return id;
}

export const githubSignature = (secret: string, body: Buffer | string): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** POSTs raw bytes to a receiver, as the sending tool would. */
export function deliver(sys: TestSystem, url: string, body: Buffer | string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
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
export async function createReceiver(sys: TestSystem, token: string, kind: 'webhook-endpoints' | 'alert-sources', body: Record<string, unknown>): Promise<IssuedReceiver> {
  const res = await api(sys, { token })('POST', `/api/v1/${kind}`, body);
  expectStatus(res, 201);
  const data = res.json().data as { id: string; token: string; url: string };
  expect(data.url.startsWith(PUBLIC_URL)).toBe(true);
  return { id: data.id, token: data.token, url: data.url, path: data.url.slice(PUBLIC_URL.length) };
}

/** Polls `read` until `ok` holds (stores are written by consumers, after the 202). */
export async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > until) expect.fail(`timed out waiting for ${what}: last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
