import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { createEnvironment, createHost, createReceiver, startEventsSystem } from '../events/support.ts';

/**
 * Immutable fields on PUT (Kubernetes' convention, README "API conventions"): a client doing GET → edit → PUT sends
 * back the fields fixed at creation as it read them, which is accepted; a changed one is 400 naming the field and
 * changes nothing. Every PUT with such fields, one case each.
 */

let sys: TestSystem;
let root: string;
let clientId: string;
let otherClient: string;
let envId: string;
let hostId: string;

const call = (method: 'GET' | 'PUT' | 'POST', url: string, body?: unknown) => api(sys, { token: root })(method, url, body);

beforeAll(async () => {
  ({ sys, root } = await startEventsSystem());
  clientId = (await createClient(sys)).id;
  otherClient = (await createClient(sys)).id;
  envId = await createEnvironment(sys, clientId);
  hostId = await createHost(sys, clientId, envId, `web-${randomUUID().slice(0, 6)}`);
});
afterAll(() => sys?.stop());

type Read = () => Promise<Record<string, unknown>>;
const getOne =
  (url: string): Read =>
  async () => {
    const got = await call('GET', url);
    expectStatus(got, 200);
    return got.json().data as Record<string, unknown>;
  };

/** Read the resource, PUT it back with `edit` applied: 200 with the edit; each changed immutable field: 400 naming it, nothing written. */
async function roundTrip(url: string, read: Read, edit: Record<string, unknown>, changed: Record<string, unknown>): Promise<void> {
  const put = await call('PUT', url, { ...(await read()), ...edit });
  expectStatus(put, 200);
  expect(put.json().data).toMatchObject(edit);

  const after = await read();
  for (const [field, value] of Object.entries(changed)) {
    const res = await call('PUT', url, { ...after, ...edit, name: 'must not be written', text: 'must not be written', [field]: value });
    expectStatus(res, 400);
    expect(res.json().error.message).toMatch(new RegExp(`^body\\.${field}: cannot be changed`));
    expect(res.json().error.message).toContain(JSON.stringify(after[field]));
  }
  expect(await read()).toEqual(after);
}

/** Notes have no single GET: a client reads them from the list of their target. */
const noteIn =
  (target: string, id: string): Read =>
  async () => {
    const res = await call('GET', `/api/v1/annotations?${target}&start=2026-05-31T00:00:00Z&end=2026-06-02T00:00:00Z`);
    expectStatus(res, 200);
    const found = (res.json().data as Record<string, unknown>[]).find((n) => n.id === id);
    if (!found) expect.fail(`note ${id} not listed`);
    return found;
  };

describe('PUT accepts immutable fields sent unchanged and refuses changed ones', () => {
  it('clients: slug', async () => {
    await roundTrip(`/api/v1/clients/${clientId}`, getOne(`/api/v1/clients/${clientId}`), { name: 'Renamed client' }, { slug: 'another-slug' });
  });

  it('environments: client_id and slug', async () => {
    await roundTrip(`/api/v1/environments/${envId}`, getOne(`/api/v1/environments/${envId}`), { name: 'Renamed environment' }, { slug: 'another-slug', client_id: otherClient });
  });

  it('webhook endpoints: client_id and source', async () => {
    const r = await createReceiver(sys, root, 'webhook-endpoints', { client_id: clientId, environment_id: envId, source: 'github', name: 'shop-api', secret: 'gh-s3cret-value' });
    await roundTrip(`/api/v1/webhook-endpoints/${r.id}`, getOne(`/api/v1/webhook-endpoints/${r.id}`), { name: 'shop-api renamed' }, { client_id: otherClient, source: 'gitlab' });
    // The secret was neither shown nor sent back, so it stays set.
    expect((await call('GET', `/api/v1/webhook-endpoints/${r.id}`)).json().data).toMatchObject({ has_secret: true });
  });

  it('alert sources: client_id (source is fixed by its schema)', async () => {
    const r = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'alerts' });
    await roundTrip(`/api/v1/alert-sources/${r.id}`, getOne(`/api/v1/alert-sources/${r.id}`), { name: 'alerts renamed', oncall_phone: '+15551234567' }, { client_id: otherClient });
  });

  it('notes: scope, target and author, for a host note and a client note (null targets echoed as null)', async () => {
    const hostNote = await call('POST', '/api/v1/annotations', { scope: 'host', host_id: hostId, timestamp: '2026-06-01T00:00:00.000Z', text: 'deploy window' });
    expectStatus(hostNote, 201);
    const hostNoteId = hostNote.json().data.id as string;
    await roundTrip(`/api/v1/annotations/${hostNoteId}`, noteIn(`host_id=${hostId}`, hostNoteId), { text: 'deploy window, extended' }, {
      scope: 'client',
      host_id: randomUUID(),
      environment_id: randomUUID(),
      client_id: otherClient,
      created_by: randomUUID(),
      created_by_name: 'Someone Else',
    });
    const clientNote = await call('POST', '/api/v1/annotations', { scope: 'client', client_id: clientId, timestamp: '2026-06-01T00:00:00.000Z', text: 'freeze' });
    expectStatus(clientNote, 201);
    const clientNoteId = clientNote.json().data.id as string;
    await roundTrip(`/api/v1/annotations/${clientNoteId}`, noteIn(`client_id=${clientId}`, clientNoteId), { text: 'freeze, extended' }, { environment_id: envId, host_id: hostId });
  });
});
