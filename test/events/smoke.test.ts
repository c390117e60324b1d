import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { expectStatus } from '../identity/admin-support.ts';
import { createReceiver, deliver, eventually, fixture, githubSignature, startEventsSystem } from './support.ts';

let sys: TestSystem;
let root: string;
beforeAll(async () => ({ sys, root } = await startEventsSystem()));
afterAll(() => sys?.stop());

it('smoke', async () => {
  const client = await createClient(sys);
  const r = await createReceiver(sys, root, 'webhook-endpoints', { client_id: client.id, source: 'github', name: 'shop', secret: 's3cret' });
  const body = fixture('github/release-published.json');
  const res = await deliver(sys, r.path, body, { 'x-github-event': 'release', 'x-github-delivery': 'd-1', 'x-hub-signature-256': githubSignature('s3cret', body) });
  console.log(res.statusCode, res.body);
  expectStatus(res, 202);
  const rows = await eventually(() => sys.sql<{ summary: string }>(`SELECT summary FROM deploys WHERE client_id = ?`, [client.id]), (r) => r.length === 1, 'deploy');
  expect(rows[0]!.summary).toContain('northwind/shop-api');
});
