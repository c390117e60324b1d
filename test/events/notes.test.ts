import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { api, expectStatus, userWith, waitForAudit, type Method } from '../identity/admin-support.ts';
import { createClient, forgetAccess } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import {
  apiKeyWith,
  createEnvironment,
  createHost,
  customRole,
  environmentScoped,
  startEventsSystem,
  statusOfCall,
  userWithRole,
} from './support.ts';

/**
 * Notes on charts (docs/api/events.md#notes-on-charts): every rule as its own test. One client
 * with two environments (e1: hosts h1, h2; e2: host h3) and another client out of everybody's reach but the root's.
 */

let sys: TestSystem;
let root: string;
let c: string;
let e1: string;
let e2: string;
let h1: string;
let h2: string;
let h3: string;
let author: { id: string; token: string; email: string };
let writerRole: string;

const T0 = Date.parse('2026-06-01T00:00:00Z');
const at = (minutes: number): string => new Date(T0 + minutes * 60_000).toISOString();

interface NoteOut {
  id: string;
  scope: string;
  kind: string;
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  timestamp: string;
  ends_at: string | null;
  text: string;
  created_by: string;
  created_by_name: string;
  created_at: string;
  updated_at: string;
}

const as = (token: string) => api(sys, { token });
async function note(token: string, body: Record<string, unknown>): Promise<NoteOut> {
  const res = await as(token)('POST', '/api/v1/annotations', { timestamp: at(0), text: 'note', ...body });
  expectStatus(res, 201);
  return res.json().data as NoteOut;
}
async function list(token: string, target: string, start: string, end: string): Promise<NoteOut[]> {
  const res = await as(token)(
    'GET',
    `/api/v1/annotations?${target}&start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}`,
  );
  expectStatus(res, 200);
  return res.json().data as NoteOut[];
}
const ids = (notes: NoteOut[]): string[] => notes.map((n) => n.id).sort();

beforeAll(async () => {
  ({ sys, root } = await startEventsSystem());
  c = (await createClient(sys)).id;
  e1 = await createEnvironment(sys, c, 'Production');
  e2 = await createEnvironment(sys, c, 'Staging');
  h1 = await createHost(sys, c, e1, 'web-1');
  h2 = await createHost(sys, c, e1, 'web-2');
  h3 = await createHost(sys, c, e2, 'stage-1');
  writerRole = await customRole(sys, ['metrics:read', 'annotations:write']);
  author = await userWithRole(sys, writerRole, c);
});
afterAll(() => sys?.stop());

describe('creating notes', () => {
  it('creates a point note on a host: environment and client filled from the host, the author and their name recorded, audited', async () => {
    await sys.sql(`UPDATE users SET display_name = 'Ada Writer' WHERE id = ?`, [author.id]);
    const n = await note(author.token, {
      scope: 'host',
      host_id: h1,
      kind: 'maintenance',
      timestamp: '2026-06-01T02:00:00+02:00',
      text: 'kernel upgrade',
    });
    expect(n).toMatchObject({
      scope: 'host',
      kind: 'maintenance',
      client_id: c,
      environment_id: e1,
      host_id: h1,
      timestamp: at(0),
      ends_at: null,
      text: 'kernel upgrade',
      created_by: author.id,
      created_by_name: 'Ada Writer',
    });
    expect(Object.keys(n).sort()).toEqual([
      'client_id',
      'created_at',
      'created_by',
      'created_by_name',
      'ends_at',
      'environment_id',
      'host_id',
      'id',
      'kind',
      'scope',
      'text',
      'timestamp',
      'updated_at',
    ]);
    const audit = await waitForAudit(sys, root, { action: 'annotation_created', resource_id: n.id });
    expect(audit.actor_id).toBe(author.id);
    expect((audit.details.note as NoteOut).text).toBe('kernel upgrade');
  });

  it('creates environment and client notes, and range notes with ends_at; kind defaults to note', async () => {
    const env = await note(author.token, {
      scope: 'environment',
      environment_id: e1,
      timestamp: at(10),
      ends_at: at(70),
      kind: 'deploy',
    });
    expect(env).toMatchObject({
      scope: 'environment',
      client_id: c,
      environment_id: e1,
      host_id: null,
      ends_at: at(70),
      kind: 'deploy',
    });
    const client = await note(author.token, { scope: 'client', client_id: c });
    expect(client).toMatchObject({ scope: 'client', client_id: c, environment_id: null, host_id: null, kind: 'note' });
  });

  it('takes 1 to 500 characters of text (an emoji is one), not blank', async () => {
    const post = (text: unknown) =>
      as(author.token)('POST', '/api/v1/annotations', { scope: 'host', host_id: h1, timestamp: at(0), text });
    expectStatus(await post('x'.repeat(500)), 201);
    expectStatus(await post('😀'.repeat(500)), 201);
    expectStatus(await post('x'.repeat(501)), 400);
    expectStatus(await post(''), 400);
    expectStatus(await post('   '), 400);
    expectStatus(await post(undefined), 400);
  });

  it('requires ends_at after timestamp, RFC 3339 times, a known scope and kind, and exactly the matching target', async () => {
    const post = (body: Record<string, unknown>) =>
      as(author.token)('POST', '/api/v1/annotations', {
        scope: 'host',
        host_id: h1,
        timestamp: at(0),
        text: 't',
        ...body,
      });
    const same = await post({ ends_at: at(0) });
    expectStatus(same, 400);
    expect(same.json().error.message).toContain('ends_at');
    expectStatus(await post({ ends_at: at(-1) }), 400);
    expectStatus(await post({ timestamp: '2026-06-01 00:00' }), 400);
    expectStatus(await post({ timestamp: undefined }), 400);
    expectStatus(await post({ kind: 'incident' }), 400);
    expectStatus(await post({ scope: 'team' }), 400);
    expectStatus(await post({ host_id: undefined }), 400);
    const extra = await post({ client_id: c });
    expectStatus(extra, 400);
    expect(extra.json().error.message).toContain('client_id');
    expectStatus(await post({ scope: 'environment', host_id: undefined }), 400);
    expectStatus(await post({ host_id: 'not-a-uuid' }), 400);
  });

  it('needs annotations:write at the note’s scope (403), a target in reach (404), and a signed-in user: API keys get 403', async () => {
    const viewer = (await userWith(sys, 'Viewer', c)).token;
    expectStatus(
      await as(viewer)('POST', '/api/v1/annotations', { scope: 'host', host_id: h1, timestamp: at(0), text: 't' }),
      403,
    );
    expectStatus(
      await as(viewer)('POST', '/api/v1/annotations', { scope: 'client', client_id: c, timestamp: at(0), text: 't' }),
      403,
    );
    const other = await createClient(sys);
    const otherHost = await createHost(sys, other.id, await createEnvironment(sys, other.id), 'elsewhere');
    expectStatus(
      await as(author.token)('POST', '/api/v1/annotations', {
        scope: 'host',
        host_id: otherHost,
        timestamp: at(0),
        text: 't',
      }),
      404,
    );
    expectStatus(
      await as(author.token)('POST', '/api/v1/annotations', {
        scope: 'client',
        client_id: other.id,
        timestamp: at(0),
        text: 't',
      }),
      404,
    );
    expectStatus(
      await as(author.token)('POST', '/api/v1/annotations', {
        scope: 'host',
        host_id: randomUUID(),
        timestamp: at(0),
        text: 't',
      }),
      404,
    );
    const key = await apiKeyWith(sys, root, roleIdByName('Admin'), c);
    const byKey = await api(sys, { apiKey: key })('POST', '/api/v1/annotations', {
      scope: 'client',
      client_id: c,
      timestamp: at(0),
      text: 't',
    });
    expectStatus(byKey, 403);
    const n = await note(author.token, { scope: 'client', client_id: c });
    expectStatus(
      await api(sys, { apiKey: key })('PUT', `/api/v1/annotations/${n.id}`, { timestamp: at(0), text: 'k' }),
      403,
    );
    expectStatus(await api(sys, { apiKey: key })('DELETE', `/api/v1/annotations/${n.id}`), 403);
    // Reading takes an API key like any other read.
    expectStatus(
      await api(sys, { apiKey: key })('GET', `/api/v1/annotations?client_id=${c}&start=${at(-1)}&end=${at(1)}`),
      200,
    );
  });

  it('is environment-aware: a writer on one environment writes on it and its hosts, nowhere else', async () => {
    const user = await userWithRole(sys, await customRole(sys, []), c);
    const ctx = environmentScoped(user, { [e1]: { client_id: c, permissions: ['metrics:read', 'annotations:write'] } });
    const create = (body: Record<string, unknown>) =>
      statusOfCall(
        sys.caller.call(
          'svc.events.annotations.create',
          { kind: 'note', timestamp: at(0), text: 'env-scoped', ...body } as never,
          ctx,
        ),
      );
    expect(await create({ scope: 'host', host_id: h1 })).toBe(200);
    expect(await create({ scope: 'environment', environment_id: e1 })).toBe(200);
    // Another environment of the same client is out of this caller's scope; the client needs a client-wide grant.
    expect(await create({ scope: 'host', host_id: h3 })).toBe(404);
    expect(await create({ scope: 'environment', environment_id: e2 })).toBe(404);
    expect(await create({ scope: 'client', client_id: c })).toBe(403);
  });
});

describe('listing notes: inheritance', () => {
  let n: Record<string, NoteOut>;
  let reader: string;
  const start = at(1000);
  const end = at(1100);
  beforeAll(async () => {
    reader = (await userWith(sys, 'Viewer', c)).token;
    const make = (body: Record<string, unknown>) => note(author.token, { timestamp: at(1050), ...body });
    n = {
      h1: await make({ scope: 'host', host_id: h1 }),
      h2: await make({ scope: 'host', host_id: h2 }),
      h3: await make({ scope: 'host', host_id: h3 }),
      e1: await make({ scope: 'environment', environment_id: e1 }),
      e2: await make({ scope: 'environment', environment_id: e2 }),
      c: await make({ scope: 'client', client_id: c }),
    };
  });

  it("a host chart gets its host's, its environment's and its client's notes", async () => {
    expect(ids(await list(reader, `host_id=${h1}`, start, end))).toEqual(ids([n.h1!, n.e1!, n.c!]));
  });

  it("an environment chart gets its own, its hosts' and its client's notes", async () => {
    expect(ids(await list(reader, `environment_id=${e1}`, start, end))).toEqual(ids([n.h1!, n.h2!, n.e1!, n.c!]));
    expect(ids(await list(reader, `environment_id=${e2}`, start, end))).toEqual(ids([n.h3!, n.e2!, n.c!]));
  });

  it("a client chart gets all of the client's notes", async () => {
    expect(ids(await list(reader, `client_id=${c}`, start, end))).toEqual(ids(Object.values(n)));
  });

  it('lists oldest first', async () => {
    const first = await note(author.token, { scope: 'host', host_id: h1, timestamp: at(1001) });
    const last = await note(author.token, { scope: 'host', host_id: h1, timestamp: at(1099) });
    const got = await list(reader, `host_id=${h1}`, start, end);
    expect(got[0]!.id).toBe(first.id);
    expect(got.at(-1)!.id).toBe(last.id);
    expect(got.map((x) => x.timestamp)).toEqual([...got.map((x) => x.timestamp)].sort());
  });
});

describe('listing notes: the range', () => {
  let h: string;
  let reader: string;
  beforeAll(async () => {
    h = await createHost(sys, c, e1, 'range-host');
    reader = (await userWith(sys, 'Viewer', c)).token;
  });
  const S = 2000;
  const E = 2100;
  const window = () => list(reader, `host_id=${h}`, at(S), at(E));

  it('returns point notes inside the range, its ends included, and not those outside', async () => {
    const inside = await note(author.token, { scope: 'host', host_id: h, timestamp: at(2050) });
    const onStart = await note(author.token, { scope: 'host', host_id: h, timestamp: at(S) });
    const onEnd = await note(author.token, { scope: 'host', host_id: h, timestamp: at(E) });
    const before = await note(author.token, { scope: 'host', host_id: h, timestamp: at(S - 1) });
    const after = await note(author.token, { scope: 'host', host_id: h, timestamp: at(E + 1) });
    const got = ids(await window());
    expect(got).toEqual(expect.arrayContaining([inside.id, onStart.id, onEnd.id]));
    expect(got).not.toContain(before.id);
    expect(got).not.toContain(after.id);
  });

  it('returns range notes overlapping the range: reaching in from before, reaching out after, covering it, inside it', async () => {
    const fromBefore = await note(author.token, {
      scope: 'host',
      host_id: h,
      timestamp: at(S - 30),
      ends_at: at(S + 10),
    });
    const pastEnd = await note(author.token, { scope: 'host', host_id: h, timestamp: at(E - 10), ends_at: at(E + 30) });
    const covering = await note(author.token, {
      scope: 'host',
      host_id: h,
      timestamp: at(S - 500),
      ends_at: at(E + 500),
    });
    const within = await note(author.token, { scope: 'host', host_id: h, timestamp: at(S + 10), ends_at: at(S + 20) });
    const touching = await note(author.token, { scope: 'host', host_id: h, timestamp: at(S - 60), ends_at: at(S) });
    const got = ids(await window());
    expect(got).toEqual(expect.arrayContaining([fromBefore.id, pastEnd.id, covering.id, within.id, touching.id]));
  });

  it('leaves out range notes that end before the range or start after it', async () => {
    const endedBefore = await note(author.token, {
      scope: 'host',
      host_id: h,
      timestamp: at(S - 100),
      ends_at: at(S - 1),
    });
    const startsAfter = await note(author.token, {
      scope: 'host',
      host_id: h,
      timestamp: at(E + 1),
      ends_at: at(E + 100),
    });
    const got = ids(await window());
    expect(got).not.toContain(endedBefore.id);
    expect(got).not.toContain(startsAfter.id);
  });

  it('inherits range notes of the environment and client by the same overlap rule', async () => {
    const envRange = await note(author.token, {
      scope: 'environment',
      environment_id: e1,
      timestamp: at(S - 100),
      ends_at: at(S + 1),
    });
    const clientOutside = await note(author.token, {
      scope: 'client',
      client_id: c,
      timestamp: at(E + 5),
      ends_at: at(E + 6),
    });
    const got = ids(await window());
    expect(got).toContain(envRange.id);
    expect(got).not.toContain(clientOutside.id);
  });

  it('returns at most 500 notes: the newest, oldest first', async () => {
    const busy = await createHost(sys, c, e2, 'busy-host');
    const values = Array.from(
      { length: 510 },
      (_, i) =>
        `('${randomUUID()}', 'host', 'note', '${c}', '${e2}', '${busy}', '${at(5000 + i)}', 'n${i}', '${author.id}', 'Ada')`,
    );
    await sys.sql(
      `INSERT INTO annotations (id, scope, kind, client_id, environment_id, host_id, "timestamp", text, created_by, created_by_name) VALUES ${values.join(',')}`,
    );
    const got = await list(reader, `host_id=${busy}`, at(5000), at(6000));
    expect(got).toHaveLength(500);
    expect(got[0]!.text).toBe('n10');
    expect(got.at(-1)!.text).toBe('n509');
  });
});

describe('listing notes: the JSON PostgreSQL writes', () => {
  it('lists each note exactly as its create answered it: fields, their order, nulls, escaped text, millisecond times', async () => {
    const h = await createHost(sys, c, e2, 'json-host');
    const made = [
      await note(author.token, {
        scope: 'host',
        host_id: h,
        kind: 'maintenance',
        timestamp: '2026-09-01T10:00:00.123Z',
        ends_at: '2026-09-01T11:30:00.987Z',
        text: 'quote " backslash \\ newline\n tab\t </script> ünïcödé 🚀 \u0001',
      }),
      await note(author.token, { scope: 'environment', environment_id: e2, timestamp: '2026-09-01T10:05:00Z' }),
      await note(author.token, { scope: 'client', client_id: c, kind: 'deploy', timestamp: '2026-09-01T10:10:00.5Z' }),
    ];
    // Microseconds are cut to milliseconds, not rounded, as iso() cuts them for the create's answer.
    await sys.sql(`UPDATE annotations SET created_at = '2026-09-01 10:00:00.123999+00' WHERE id = ?`, [made[0]!.id]);
    made[0] = { ...made[0]!, created_at: '2026-09-01T10:00:00.123Z' };
    const listed = await list(author.token, `host_id=${h}`, '2026-09-01T09:00:00Z', '2026-09-01T12:00:00Z');
    const byId = new Map(listed.map((n) => [n.id, n]));
    for (const m of made) expect(JSON.stringify(byId.get(m.id))).toBe(JSON.stringify(m));
    expect(listed.map((n) => n.id)).toEqual(made.map((n) => n.id));
  });
});

describe('listing notes: who may read what', () => {
  it('needs metrics:read on the target: 403 without it, 404 out of reach', async () => {
    const client = (await userWith(sys, 'Client', c)).token; // clients:read, hosts:read, no metrics:read
    const res = await as(client)('GET', `/api/v1/annotations?host_id=${h1}&start=${at(0)}&end=${at(10)}`);
    expectStatus(res, 403);
    expect(res.json().error.message).toContain('metrics:read');
    const other = await createClient(sys);
    const outsider = (await userWith(sys, 'Viewer', other.id)).token;
    for (const target of [`host_id=${h1}`, `environment_id=${e1}`, `client_id=${c}`, `host_id=${randomUUID()}`]) {
      expectStatus(await as(outsider)('GET', `/api/v1/annotations?${target}&start=${at(0)}&end=${at(10)}`), 404);
    }
  });

  it('takes exactly one target and a start and end, end not before start', async () => {
    const call = as(author.token);
    const q = (s: string) => call('GET', `/api/v1/annotations?${s}`);
    expectStatus(await q(`start=${at(0)}&end=${at(1)}`), 400);
    expectStatus(await q(`host_id=${h1}&client_id=${c}&start=${at(0)}&end=${at(1)}`), 400);
    expectStatus(await q(`host_id=${h1}&end=${at(1)}`), 400);
    expectStatus(await q(`host_id=${h1}&start=${at(0)}`), 400);
    expectStatus(await q(`host_id=${h1}&start=${at(1)}&end=${at(0)}`), 400);
    expectStatus(await q(`host_id=${h1}&start=yesterday&end=${at(1)}`), 400);
  });

  it("limits rows to the caller's metrics:read scope: an environment-scoped reader sees its environment and the client's notes", async () => {
    const start = at(7000);
    const end = at(7100);
    const mk = (body: Record<string, unknown>) => note(author.token, { timestamp: at(7050), ...body });
    const onH1 = await mk({ scope: 'host', host_id: h1 });
    const onE1 = await mk({ scope: 'environment', environment_id: e1 });
    const onH3 = await mk({ scope: 'host', host_id: h3 });
    const onE2 = await mk({ scope: 'environment', environment_id: e2 });
    const onC = await mk({ scope: 'client', client_id: c });
    const user = await userWithRole(sys, await customRole(sys, []), c);
    const ctx = environmentScoped(user, { [e1]: { client_id: c, permissions: ['metrics:read'] } });
    const read = async (target: Record<string, string>) =>
      (await sys.caller.call('svc.events.annotations.list', { ...target, start, end }, ctx)).map((x) => x.id).sort();
    expect(await read({ client_id: c })).toEqual([onH1.id, onE1.id, onC.id].sort());
    expect(await read({ host_id: h1 })).toEqual([onH1.id, onE1.id, onC.id].sort());
    expect(
      await statusOfCall(sys.caller.call('svc.events.annotations.list', { environment_id: e2, start, end }, ctx)),
    ).toBe(404);
    expect(await statusOfCall(sys.caller.call('svc.events.annotations.list', { host_id: h3, start, end }, ctx))).toBe(
      404,
    );
    // A client-wide reader sees all of them.
    const all = await list((await userWith(sys, 'Viewer', c)).token, `client_id=${c}`, start, end);
    expect(ids(all)).toEqual(ids([onH1, onE1, onH3, onE2, onC]));
  });
});

describe('changing notes', () => {
  it('lets the author replace kind, times and text; omitting ends_at makes a point; audited with before and after', async () => {
    const n = await note(author.token, {
      scope: 'host',
      host_id: h1,
      timestamp: at(100),
      ends_at: at(160),
      text: 'window',
      kind: 'maintenance',
    });
    const res = await as(author.token)('PUT', `/api/v1/annotations/${n.id}`, { timestamp: at(120), text: 'moved' });
    expectStatus(res, 200);
    expect(res.json().data).toMatchObject({
      id: n.id,
      scope: 'host',
      host_id: h1,
      kind: 'note',
      timestamp: at(120),
      ends_at: null,
      text: 'moved',
      created_by: author.id,
    });
    const audit = await waitForAudit(sys, root, { action: 'annotation_updated', resource_id: n.id });
    expect(audit.details).toEqual({
      before: { kind: 'maintenance', timestamp: at(100), ends_at: at(160), text: 'window' },
      after: { kind: 'note', timestamp: at(120), ends_at: null, text: 'moved' },
    });
  });

  it('refuses anyone but the author with 403: a moderator, and a super admin too', async () => {
    const n = await note(author.token, { scope: 'host', host_id: h1 });
    const moderator = (await userWith(sys, 'Admin', c)).token;
    const body = { timestamp: at(0), text: 'not yours' };
    const mod = await as(moderator)('PUT', `/api/v1/annotations/${n.id}`, body);
    expectStatus(mod, 403);
    expect(mod.json().error.message).toContain('author');
    expectStatus(await as(root)('PUT', `/api/v1/annotations/${n.id}`, body), 403);
    const peer = await userWithRole(sys, writerRole, c);
    expectStatus(await as(peer.token)('PUT', `/api/v1/annotations/${n.id}`, body), 403);
  });

  it('answers 404 to whoever cannot read the note, and for a missing one', async () => {
    const n = await note(author.token, { scope: 'host', host_id: h1 });
    const other = await createClient(sys);
    const outsider = (await userWith(sys, 'Admin', other.id)).token;
    expectStatus(await as(outsider)('PUT', `/api/v1/annotations/${n.id}`, { timestamp: at(0), text: 'x' }), 404);
    expectStatus(
      await as(author.token)('PUT', `/api/v1/annotations/${randomUUID()}`, { timestamp: at(0), text: 'x' }),
      404,
    );
    // The author, once their grant is narrowed to another environment, can no longer read it either.
    const ctx = environmentScoped(author, {
      [e2]: { client_id: c, permissions: ['metrics:read', 'annotations:write'] },
    });
    expect(
      await statusOfCall(
        sys.caller.call(
          'svc.events.annotations.update',
          { id: n.id, kind: 'note', timestamp: at(0), text: 'x' } as never,
          ctx,
        ),
      ),
    ).toBe(404);
  });

  it('never changes scope, target or author (400) and keeps the time rules', async () => {
    const n = await note(author.token, { scope: 'host', host_id: h1 });
    for (const extra of [
      { scope: 'client' },
      { host_id: h2 },
      { client_id: randomUUID() },
      { environment_id: e2 },
      { created_by: randomUUID() },
    ]) {
      const res = await as(author.token)('PUT', `/api/v1/annotations/${n.id}`, {
        timestamp: at(0),
        text: 'x',
        ...extra,
      });
      expectStatus(res, 400);
      expect(res.json().error.message).toContain('cannot be changed');
    }
    expectStatus(
      await as(author.token)('PUT', `/api/v1/annotations/${n.id}`, { timestamp: at(10), ends_at: at(5), text: 'x' }),
      400,
    );
    expectStatus(await as(author.token)('PUT', `/api/v1/annotations/${n.id}`, { timestamp: at(10), text: '' }), 400);
  });

  it('needs the author to still hold annotations:write at the scope', async () => {
    const readerOnly = await userWithRole(sys, await customRole(sys, ['metrics:read', 'annotations:write']), c);
    const n = await note(readerOnly.token, { scope: 'client', client_id: c });
    await sys.sql(
      `UPDATE roles SET permissions = '{metrics:read}' WHERE id = (SELECT role_id FROM user_client_roles WHERE user_id = ? AND client_id = ?)`,
      [readerOnly.id, c],
    );
    await forgetAccess(sys, readerOnly.id);
    expectStatus(
      await as(readerOnly.token)('PUT', `/api/v1/annotations/${n.id}`, { timestamp: at(0), text: 'x' }),
      403,
    );
    // Deleting their own note stays possible.
    expectStatus(await as(readerOnly.token)('DELETE', `/api/v1/annotations/${n.id}`), 204);
  });
});

describe('deleting notes', () => {
  const del = (token: string, id: string) => as(token)('DELETE' as Method, `/api/v1/annotations/${id}`);

  it('lets the author delete, audited as annotation_deleted', async () => {
    const n = await note(author.token, { scope: 'host', host_id: h2, text: 'bye' });
    expectStatus(await del(author.token, n.id), 204);
    expectStatus(await del(author.token, n.id), 404);
    const audit = await waitForAudit(sys, root, { action: 'annotation_deleted', resource_id: n.id });
    expect((audit.details.note as NoteOut).text).toBe('bye');
  });

  it('lets a moderator with annotations:write at the note’s scope delete another’s note', async () => {
    const n = await note(author.token, { scope: 'environment', environment_id: e1 });
    expectStatus(await del((await userWith(sys, 'Admin', c)).token, n.id), 204);
  });

  it('lets a super admin delete any note', async () => {
    const n = await note(author.token, { scope: 'client', client_id: c });
    expectStatus(await del(root, n.id), 204);
  });

  it('refuses a reader who is neither author nor moderator with 403', async () => {
    const n = await note(author.token, { scope: 'host', host_id: h1 });
    const res = await del((await userWith(sys, 'Viewer', c)).token, n.id);
    expectStatus(res, 403);
  });

  it('answers 404 when the note is missing or out of the caller’s scope', async () => {
    const n = await note(author.token, { scope: 'host', host_id: h1 });
    const other = await createClient(sys);
    expectStatus(await del((await userWith(sys, 'Admin', other.id)).token, n.id), 404);
    expectStatus(await del(author.token, randomUUID()), 404);
    expectStatus(await as(author.token)('DELETE', '/api/v1/annotations/not-a-uuid'), 400);
  });

  it('gives an environment-scoped moderator the notes of its environment, not the client’s', async () => {
    const user = await userWithRole(sys, await customRole(sys, []), c);
    const ctx = environmentScoped(user, { [e1]: { client_id: c, permissions: ['metrics:read', 'annotations:write'] } });
    const onHost = await note(author.token, { scope: 'host', host_id: h1 });
    const onClient = await note(author.token, { scope: 'client', client_id: c });
    const onOther = await note(author.token, { scope: 'host', host_id: h3 });
    expect(await statusOfCall(sys.caller.call('svc.events.annotations.delete', { id: onHost.id }, ctx))).toBe(200);
    expect(await statusOfCall(sys.caller.call('svc.events.annotations.delete', { id: onClient.id }, ctx))).toBe(403);
    expect(await statusOfCall(sys.caller.call('svc.events.annotations.delete', { id: onOther.id }, ctx))).toBe(404);
  });
});
