import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus } from '../identity/admin-support.ts';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { createClient, createUser } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { createEnvironment, createHost, createReceiver, customRole, startEventsSystem } from '../events/support.ts';

/**
 * Immutable fields on PUT (Kubernetes' convention, docs/api/conventions.md): a client doing GET → edit → PUT sends
 * back the fields fixed at creation as it read them, which is accepted; a changed one is 400 naming the field and
 * changes nothing. Every PUT with such fields, one case each.
 */

let sys: TestSystem;
let root: string;
let clientId: string;
let otherClient: string;
let envId: string;
let hostId: string;

const call = (method: 'GET' | 'PUT' | 'POST', url: string, body?: unknown) =>
  api(sys, { token: root })(method, url, body);

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

interface RoundTripOptions {
  /** Writable fields sent beside each changed immutable one, which must not be written (default: name and text). */
  poison?: Record<string, unknown>;
  /** The PUT answers another resource than `read` shows (a team for a member's role): only `read` is checked. */
  replyIsOther?: boolean;
}

/** Read the resource, PUT it back with `edit` applied: 200 with the edit; each changed immutable field: 400 naming it, nothing written. */
async function roundTrip(
  url: string,
  read: Read,
  edit: Record<string, unknown>,
  changed: Record<string, unknown>,
  opts: RoundTripOptions = {},
): Promise<void> {
  const put = await call('PUT', url, { ...(await read()), ...edit });
  expectStatus(put, 200);
  if (!opts.replyIsOther) expect(put.json().data).toMatchObject(edit);

  const after = await read();
  expect(after).toMatchObject(edit);
  for (const [field, value] of Object.entries(changed)) {
    const poison = opts.poison ?? { name: 'must not be written', text: 'must not be written' };
    const res = await call('PUT', url, { ...after, ...edit, ...poison, [field]: value });
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

/** A UUID in upper case is the same id (RFC 9562): sent back that way it is no change. */
const upper = (data: Record<string, unknown>, ...fields: string[]): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, fields.includes(k) && typeof v === 'string' ? v.toUpperCase() : v]),
  );

describe('PUT accepts immutable fields sent unchanged and refuses changed ones', () => {
  it('clients: slug', async () => {
    await roundTrip(
      `/api/v1/clients/${clientId}`,
      getOne(`/api/v1/clients/${clientId}`),
      { name: 'Renamed client' },
      { slug: 'another-slug' },
    );
  });

  it('environments: client_id and slug', async () => {
    await roundTrip(
      `/api/v1/environments/${envId}`,
      getOne(`/api/v1/environments/${envId}`),
      { name: 'Renamed environment' },
      { slug: 'another-slug', client_id: otherClient },
    );
  });

  it('webhook endpoints: client_id and source', async () => {
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      environment_id: envId,
      source: 'github',
      name: 'shop-api',
      secret: 'gh-s3cret-value',
    });
    await roundTrip(
      `/api/v1/webhook-endpoints/${r.id}`,
      getOne(`/api/v1/webhook-endpoints/${r.id}`),
      { name: 'shop-api renamed' },
      { client_id: otherClient, source: 'gitlab' },
    );
    // The secret was neither shown nor sent back, so it stays set.
    expect((await call('GET', `/api/v1/webhook-endpoints/${r.id}`)).json().data).toMatchObject({ has_secret: true });
  });

  it('alert sources: client_id (source is fixed by its schema)', async () => {
    const r = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'alerts' });
    await roundTrip(
      `/api/v1/alert-sources/${r.id}`,
      getOne(`/api/v1/alert-sources/${r.id}`),
      { name: 'alerts renamed', oncall_phone: '+15551234567' },
      { client_id: otherClient },
    );
  });

  it('notes: scope, target and author, for a host note and a client note (null targets echoed as null)', async () => {
    const hostNote = await call('POST', '/api/v1/annotations', {
      scope: 'host',
      host_id: hostId,
      timestamp: '2026-06-01T00:00:00.000Z',
      text: 'deploy window',
    });
    expectStatus(hostNote, 201);
    const hostNoteId = hostNote.json().data.id as string;
    await roundTrip(
      `/api/v1/annotations/${hostNoteId}`,
      noteIn(`host_id=${hostId}`, hostNoteId),
      { text: 'deploy window, extended' },
      {
        scope: 'client',
        host_id: randomUUID(),
        environment_id: randomUUID(),
        client_id: otherClient,
        created_by: randomUUID(),
        created_by_name: 'Someone Else',
      },
    );
    const clientNote = await call('POST', '/api/v1/annotations', {
      scope: 'client',
      client_id: clientId,
      timestamp: '2026-06-01T00:00:00.000Z',
      text: 'freeze',
    });
    expectStatus(clientNote, 201);
    const clientNoteId = clientNote.json().data.id as string;
    await roundTrip(
      `/api/v1/annotations/${clientNoteId}`,
      noteIn(`client_id=${clientId}`, clientNoteId),
      { text: 'freeze, extended' },
      { environment_id: envId, host_id: hostId },
    );
  });

  it('a UUID sent back in upper case is the same id', async () => {
    const env = await getOne(`/api/v1/environments/${envId}`)();
    const put = await call('PUT', `/api/v1/environments/${envId}`, {
      ...upper(env, 'client_id'),
      name: 'Upper-case echo',
    });
    expectStatus(put, 200);
    expect(put.json().data).toMatchObject({ client_id: clientId, name: 'Upper-case echo' });
  });

  it('users: email, and an invited user sent back as invited', async () => {
    const created = await call('POST', '/api/v1/users', {
      email: `invited-${randomUUID().slice(0, 8)}@example.com`,
      display_name: 'Invited One',
    });
    expectStatus(created, 201);
    const id = created.json().data.id as string;
    await roundTrip(
      `/api/v1/users/${id}`,
      getOne(`/api/v1/users/${id}`),
      { display_name: 'Invited, renamed', status: 'invited' },
      { email: 'someone-else@example.com' },
      {
        poison: { display_name: 'must not be written' },
      },
    );
  });

  it('users: an active user set to invited is 400 naming status, nothing written', async () => {
    const { id } = await createUser(sys);
    const read = getOne(`/api/v1/users/${id}`);
    const before = await read();
    const res = await call('PUT', `/api/v1/users/${id}`, {
      ...before,
      display_name: 'must not be written',
      status: 'invited',
    });
    expectStatus(res, 400);
    expect(res.json().error.message).toMatch(/^body\.status: cannot be set to "invited" \(it is "active"\)/);
    expect(await read()).toEqual(before);
  });

  it("users' client assignments: client_id", async () => {
    const { id } = await createUser(sys);
    const assigned = await call('POST', `/api/v1/users/${id}/clients`, {
      client_id: clientId,
      role_id: roleIdByName('Client'),
    });
    expectStatus(assigned, 201);
    const read: Read = async () => {
      const res = await call('GET', `/api/v1/users/${id}/clients`);
      expectStatus(res, 200);
      const found = (res.json().data as Record<string, unknown>[]).find((a) => a.client_id === clientId);
      if (!found) expect.fail('assignment not listed');
      return found;
    };
    const url = `/api/v1/users/${id}/clients/${clientId}`;
    await roundTrip(
      url,
      read,
      { role_id: roleIdByName('Viewer') },
      { client_id: otherClient },
      { poison: { role_id: roleIdByName('Client') } },
    );
    expectStatus(await call('PUT', url, upper(await read(), 'client_id', 'role_id')), 200);
  });

  it('team members: user_id', async () => {
    const team = await call('POST', '/api/v1/teams', { name: `team-${randomUUID().slice(0, 8)}` });
    expectStatus(team, 201);
    const teamId = team.json().data.id as string;
    const [member, stranger] = [await createUser(sys), await createUser(sys)];
    expectStatus(
      await call('POST', `/api/v1/teams/${teamId}/members`, { user_id: member.id, role_id: roleIdByName('Client') }),
      201,
    );
    const read: Read = async () => {
      const found = ((await getOne(`/api/v1/teams/${teamId}`)()).members as Record<string, unknown>[]).find(
        (m) => m.user_id === member.id,
      );
      if (!found) expect.fail('member not listed');
      return found;
    };
    const url = `/api/v1/teams/${teamId}/members/${member.id}`;
    await roundTrip(
      url,
      read,
      { role_id: roleIdByName('Viewer') },
      { user_id: stranger.id },
      { poison: { role_id: roleIdByName('Client') }, replyIsOther: true },
    );
    expectStatus(await call('PUT', url, upper(await read(), 'user_id')), 200);
  });

  it('saved searches: user_id', async () => {
    const created = await call('POST', '/api/v1/saved-searches', {
      name: 'web hosts',
      query: 'tag.env = "prod"',
      is_shared: true,
    });
    expectStatus(created, 201);
    const id = created.json().data.id as string;
    await roundTrip(
      `/api/v1/saved-searches/${id}`,
      getOne(`/api/v1/saved-searches/${id}`),
      { name: 'web hosts, renamed', is_shared: false },
      { user_id: randomUUID() },
    );
  });

  it('watch config: the record as GET shows it (config_data), host_id fixed', async () => {
    const url = `/api/v1/hosts/${hostId}/watch-config`;
    expectStatus(await call('PUT', url, { paths: ['/etc/nginx'] }), 200);
    const edit = {
      config_data: {
        paths: ['/etc/nginx', '/srv'],
        exclude_patterns: ['*.tmp'],
        sensitive_files: [],
        max_file_size: 4096,
      },
    };
    await roundTrip(
      url,
      getOne(url),
      edit,
      { host_id: randomUUID() },
      { poison: { config_data: { ...edit.config_data, paths: ['/must-not-be-written'] } } },
    );
    expectStatus(await call('PUT', url, upper(await getOne(url)(), 'host_id')), 200);
    const both = await call('PUT', url, { ...(await getOne(url)()), paths: ['/x'] });
    expectStatus(both, 400);
    expect(both.json().error.message).toMatch(/^body\.config_data: give the config either/);
  });

  it('roles, teams and service accounts: a GET sent back with an edit is accepted (nothing fixed at creation)', async () => {
    const roleId = await customRole(sys, ['hosts:read']);
    await roundTrip(
      `/api/v1/roles/${roleId}`,
      getOne(`/api/v1/roles/${roleId}`),
      { description: 'edited', permissions: ['hosts:read', 'hosts:write'] },
      {},
    );
    const team = await call('POST', '/api/v1/teams', { name: `team-${randomUUID().slice(0, 8)}` });
    expectStatus(team, 201);
    const teamId = team.json().data.id as string;
    await roundTrip(`/api/v1/teams/${teamId}`, getOne(`/api/v1/teams/${teamId}`), { description: 'edited' }, {});
    const sa = await call('POST', '/api/v1/service-accounts', {
      name: `sa-${randomUUID().slice(0, 8)}`,
      role_id: roleId,
      client_scope: [clientId],
    });
    expectStatus(sa, 201);
    const saId = sa.json().data.id as string;
    await roundTrip(
      `/api/v1/service-accounts/${saId}`,
      getOne(`/api/v1/service-accounts/${saId}`),
      { description: 'edited', is_active: false },
      {},
    );
  });
});
