import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from '../identity/admin-support.ts';
import { get, SD, startSdSystem, stopSdSystem, type SdSystem } from './support.ts';

/**
 * PUT of an organization mapping follows the API convention for fields fixed at creation (docs/api/conventions.md):
 * the mapping as the list shows it, sent back with an edit, is accepted; another client is 400 naming `client_id`.
 */

let s: SdSystem;

beforeAll(async () => {
  s = await startSdSystem();
});
afterAll(() => stopSdSystem(s));

const mappingOfA = async (): Promise<Record<string, unknown>> => {
  const list = await get(s, s.root, `${SD}/admin/organizations?client_id=${s.clientA.id}`);
  expectStatus(list, 200);
  const [m] = list.json().data as Record<string, unknown>[];
  if (!m) expect.fail('client A has no mapping');
  return m;
};
const put = (id: unknown, payload: Record<string, unknown>) =>
  s.sys.http({ method: 'PUT', url: `${SD}/admin/organizations/${String(id)}`, token: s.root, payload });

describe('PUT /service-desk/admin/organizations/:id', () => {
  it('accepts the mapping as listed with an edit, and refuses another client_id naming it, writing nothing', async () => {
    const m = await mappingOfA();
    const edited = await put(m.id, { ...m, labels: ['vip'] });
    expectStatus(edited, 200);
    expect(edited.json().data).toMatchObject({ id: m.id, client_id: s.clientA.id, labels: ['vip'] });

    const after = await mappingOfA();
    const moved = await put(m.id, { ...after, labels: [], client_id: s.clientB.id });
    expectStatus(moved, 400);
    expect(moved.json().error.message).toMatch(/^body\.client_id: cannot be changed/);
    expect(await mappingOfA()).toEqual(after);

    expectStatus(await put(m.id, { ...after, labels: [] }), 200);
  });
});
