import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { compileWhere, Params, recordCountSql } from '../../actors/fleet/search/compile.ts';
import { parsePql } from '../../actors/fleet/search/parser.ts';
import { readOnlySearch } from '../../actors/fleet/search/run.ts';
import { DomainError } from '../../contracts/errors.ts';
import { assignRole, createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { FLEET_A, insertFleet, insertEnvironment, insertSearchHost } from './search-fixtures.ts';
import { compareDebianVersions } from './version-order.ts';

let sys: TestSystem;
let root: string;
let clientA: { id: string; slug: string };
let clientB: { id: string; slug: string };
let clientC: { id: string; slug: string };
/** Fixture key → host id (client A), and the reverse. */
let ids: Record<string, string>;
let keyOf: Map<string, string>;
let bIds: Record<string, string>;
const tokens: Record<'engA' | 'engB' | 'engC' | 'viewerA' | 'mixed', string> = {
  engA: '',
  engB: '',
  engC: '',
  viewerA: '',
  mixed: '',
};

const enc = encodeURIComponent;

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  clientA = await createClient(sys, `Search A ${sys.tag}`);
  clientB = await createClient(sys, `Search B ${sys.tag}`);
  clientC = await createClient(sys, `Search C ${sys.tag}`);
  ids = await insertFleet(sys, clientA.id, FLEET_A);
  keyOf = new Map(Object.entries(ids).map(([k, id]) => [id, k]));
  // Client B holds a host just like web-01 (same tags, services, packages) and one of its own.
  bIds = await insertFleet(sys, clientB.id, {
    bweb: { ...FLEET_A.web1!, env: 'prod' },
    bonly: { env: 'staging', hostname: 'b-only', os: 'linux', tags: { env: 'prod' } },
  });
  tokens.engA = (await userWith(sys, 'Engineer', clientA.id)).token;
  tokens.engB = (await userWith(sys, 'Engineer', clientB.id)).token;
  tokens.engC = (await userWith(sys, 'Engineer', clientC.id)).token;
  tokens.viewerA = (await userWith(sys, 'Viewer', clientA.id)).token;
  // Engineer on A, but only Viewer (hosts:read without search:read) on B: searches reach A only.
  const mixed = await userWith(sys, 'Engineer', clientA.id);
  await assignRole(sys, mixed.user.id, clientB.id, roleIdByName('Viewer'));
  tokens.mixed = mixed.token;
});
afterAll(() => sys?.stop());

interface Hit {
  id: string;
  hostname: string;
  ip_address: string;
  os: string;
  arch: string;
  agent_status: string;
  tags: Record<string, string>;
}

async function search(
  token: string,
  q: string,
  extra = '',
): Promise<{ data: Hit[]; meta: { total: number; page: number; per_page: number } }> {
  const res = await sys.http({ method: 'GET', url: `/api/v1/search?q=${enc(q)}&per_page=100${extra}`, token });
  expectStatus(res, 200);
  return res.json();
}
async function count(token: string, q: string): Promise<number> {
  const res = await sys.http({ method: 'GET', url: `/api/v1/search/count?q=${enc(q)}`, token });
  expectStatus(res, 200);
  return (res.json() as { data: { count: number } }).data.count;
}
/** Client A's fixture keys a query finds, sorted; a host of another client fails the test. */
async function keys(q: string, token = tokens.engA): Promise<string[]> {
  const { data, meta } = await search(token, q);
  const found = data.map((h) => keyOf.get(h.id) ?? `foreign:${h.hostname}`).sort();
  expect(meta.total).toBe(found.length);
  expect(await count(token, q)).toBe(found.length);
  return found;
}

const ALL = Object.keys(FLEET_A).sort();
const GLOBS = ['g1', 'g2', 'g3', 'g4', 'g5'];
const except = (...k: string[]): string[] => ALL.filter((x) => !k.includes(x));

describe('PQL results against a fleet with known inventory', () => {
  // [query, fixture keys expected]: every operator on every prefix.
  const cases: [string, string[]][] = [
    // host.* strings
    ['host.hostname = "web-01"', ['web1']],
    ['host.hostname != "web-01"', except('web1')],
    ['host.hostname ~ "web-*"', ['web1', 'web2']],
    ['host.hostname IN ("web-01", "db-01")', ['db1', 'web1']],
    ['host.hostname NOT IN ("web-01", "db-01")', except('web1', 'db1')],
    ['host.ip_address EXISTS', ['db1', 'db2', 'web1', 'web2', 'win']],
    ['host.ip_address ~ "10.1.*"', ['db2', 'win']],
    ['host.os = "linux"', ['db1', 'db2', 'web1', 'web2']],
    ['host.arch = "arm64"', ['web2']],
    ['host.agent_status = "online"', ['db1', 'db2', 'web1']],
    ['host.agent_status IN ("offline")', except('db1', 'db2', 'web1')],
    ['host.environment = "prod"', ['db1', 'web1', 'web2']],
    ['host.environment != "prod"', except('db1', 'web1', 'web2')],
    ['host.environment ~ "stag*"', except('db1', 'web1', 'web2')],
    // host.* numbers, with size units on bytes
    ['host.cpu_cores = 4', ['web1', 'web2']],
    ['host.cpu_cores != 4', except('web1', 'web2')],
    ['host.cpu_cores > 4', ['db1', 'db2']],
    ['host.cpu_cores >= 4', ['db1', 'db2', 'web1', 'web2']],
    ['host.cpu_cores < 2', GLOBS],
    ['host.cpu_cores <= 2', [...GLOBS, 'win'].sort()],
    ['host.cpu_cores IN (2, 16)', ['db1', 'win']],
    ['host.cpu_cores NOT IN (1, 4)', ['db1', 'db2', 'win']],
    ['host.memory_total_bytes >= 16GiB', ['db1', 'db2', 'web2']],
    ['host.memory_total_bytes < 8589934592', [...GLOBS, 'win'].sort()],
    ['host.memory_total_bytes = 0.5KiB', []],
    ['host.memory_total_bytes > 30000MB', ['db1', 'db2']],
    // host.* versions: dpkg order, so 1.4.10 > 1.4.9; an empty (unreported) version matches no comparison
    ['host.agent_version >= "1.4"', ['db1', 'db2', 'web1']],
    ['host.agent_version > "1.4.9"', ['db1']],
    ['host.agent_version < "1.4"', ['web2', 'win']],
    ['host.agent_version = "1.4.2"', ['db2', 'web1']],
    ['host.agent_version != "1.4.2"', ['db1', 'web2', 'win']],
    ['host.agent_version IN ("1.2.0", "1.3.9")', ['web2', 'win']],
    ['host.agent_version NOT IN ("1.2.0", "1.3.9")', ['db1', 'db2', 'web1']],
    ['host.agent_version ~ "1.4.*"', ['db1', 'db2', 'web1']],
    ['host.agent_version EXISTS', ['db1', 'db2', 'web1', 'web2', 'win']],
    ['host.os_version >= "22.10"', ['db1', 'db2']],
    ['host.kernel_version < "6"', ['web1', 'web2']],
    ['host.kernel_version <= "6.8.0-31-generic"', ['db1', 'db2', 'web1', 'web2']],
    // host.last_seen_at: a host never seen matches no comparison, and NOT of one
    ['host.last_seen_at > "2026-01-09T12:00:00Z"', ['db1', 'web1']],
    ['host.last_seen_at >= "2026-01-09"', ['db1', 'db2', 'web1']],
    ['host.last_seen_at < "2026-01-01T00:00:00+01:00"', ['win']],
    ['host.last_seen_at = "2026-01-10T10:00:00Z"', ['web1']],
    ['host.last_seen_at != "2026-01-10T10:00:00Z"', ['db1', 'db2', 'win']],
    ['host.last_seen_at <= "2026-01-10T11:00:00+01:00"', ['db1', 'db2', 'web1', 'win']],
    ['host.last_seen_at EXISTS', ['db1', 'db2', 'web1', 'win']],
    ['NOT host.last_seen_at > "2026-01-09T12:00:00Z"', except('db1', 'web1')],
    // tags and labels
    ['tag.env = "prod"', ['db1', 'web1', 'web2']],
    ['tag.env != "prod"', ['db2']],
    ['NOT tag.env = "prod"', except('db1', 'web1', 'web2')],
    ['tag.env IN ("prod", "staging")', ['db1', 'db2', 'web1', 'web2']],
    ['tag.env NOT IN ("prod")', ['db2']],
    ['tag.team ~ "d*"', ['db1', 'db2']],
    ['tag.env EXISTS', ['db1', 'db2', 'web1', 'web2']],
    ['NOT tag.env EXISTS', except('db1', 'db2', 'web1', 'web2')],
    ['label.role EXISTS', ['db1']],
    ['label.role = ""', ['db1']],
    ['label.region = ""', []],
    ['label.region ~ "EU-*"', ['db1', 'web1', 'web2']],
    ['label.region != "eu-west"', ['db2']],
    ['label.region IN ("us-east")', ['db2']],
    ['label.region NOT IN ("us-east")', ['db1', 'web1', 'web2']],
    ['label."app.kubernetes.io/name" = "frontend"', ['web1']],
    ['label.app.kubernetes.io/name = "frontend"', ['web1']],
    // services: any of a host's services matches
    ['service.name = "nginx"', ['web1', 'web2']],
    ['service.name != "nginx"', ['db1', 'db2', 'web1', 'web2']],
    ['NOT service.name = "nginx"', except('web1', 'web2')],
    ['service.name IN ("postgresql", "cron")', ['db1', 'db2']],
    ['service.name NOT IN ("sshd")', ['db1', 'db2', 'web1', 'web2']],
    ['service.name ~ "post*"', ['db1', 'db2']],
    ['service.name EXISTS', ['db1', 'db2', 'web1', 'web2']],
    ['service.active_state = "failed"', ['web2']],
    ['service.sub_state ~ "RUN*"', ['db1', 'db2', 'web1', 'web2']],
    ['service.load_state = "loaded"', ['db1', 'db2', 'web1', 'web2']],
    ['service.enabled = false', ['db2']],
    ['service.enabled != true', ['db2']],
    ['service.enabled EXISTS', ['db1', 'db2', 'web1', 'web2']],
    // two conditions on one prefix may be met by two records; [...] asks for one record meeting both
    ['service.name = "nginx" AND service.sub_state = "running"', ['web1', 'web2']],
    ['service[name = "nginx" AND sub_state = "running"]', ['web1']],
    ['service[name = "cron" AND NOT enabled EXISTS]', ['db2']],
    ['service[service.name = "postgresql" AND (active_state = "inactive" OR sub_state = "exited")]', ['db1', 'db2']],
    ['NOT service[name = "nginx" AND active_state = "active"]', except('web1')],
    // containers
    ['container.name = "web"', ['web1']],
    ['container.name != "web"', ['db2', 'web1']],
    ['container.image ~ "nginx:*"', ['web1']],
    ['container.state = "exited"', ['db2']],
    ['container.runtime = "podman"', ['db2']],
    ['container.name IN ("web", "pg-exporter")', ['db2', 'web1']],
    ['container.name NOT IN ("web", "sidecar")', ['db2']],
    ['container.name EXISTS', ['db2', 'web1']],
    ['NOT container.name EXISTS', except('db2', 'web1')],
    ['container[image ~ "*envoy*" AND state = "running"]', ['web1']],
    // packages: versions in dpkg order (epochs, revisions, ~)
    ['package.name = "openssl"', ['db1', 'db2', 'web1', 'web2']],
    ['package[name = "openssl" AND version < "3.0.13"]', ['db2', 'web1']],
    ['package[name = "openssl" AND version >= "3.0.13"]', ['db1', 'web2']],
    ['package[name = "openssl" AND version >= "1:0"]', ['db1']],
    ['package[name = "postgresql-16" AND version > "16.1"]', ['db1', 'db2']],
    ['package[name = "postgresql-16" AND version > "16.1-1"]', ['db1']],
    ['package[name = "postgresql-16" AND version <= "16.1-1"]', ['db2']],
    ['package.version = "16.2-1"', ['db1']],
    ['package.version IN ("16.2-1", "16.1-1")', ['db1', 'db2']],
    ['package[name = "nginx" AND version NOT IN ("1.18.0-6ubuntu14")]', ['web2']],
    ['package[name = "nginx" AND version != "1.18.0-6ubuntu14"]', ['web2']],
    ['package.version ~ "3.0.2*"', ['db2', 'web1']],
    ['package.version EXISTS', ['db1', 'db2', 'web1', 'web2']],
    ['package.manager = "apt"', ['db1', 'db2', 'web1', 'web2']],
    ['package.architecture = "arm64"', ['web2']],
    ['package.name ~ "lib*"', ['web1']],
    // precedence: NOT over AND over OR; parentheses
    ['tag.env = "staging" OR tag.env = "prod" AND host.arch = "arm64"', ['db2', 'web2']],
    ['(tag.env = "staging" OR tag.env = "prod") AND host.arch = "arm64"', ['web2']],
    ['NOT tag.env = "prod" AND host.os = "linux"', ['db2']],
    ['NOT (tag.env = "prod" AND host.os = "linux")', except('db1', 'web1', 'web2')],
    ['host.os = "windows" or host.os = "linux" and not host.cpu_cores >= 8', ['web1', 'web2', 'win']],
    ['((host.os = "windows"))', ['win']],
    // glob: case-insensitive, `_` and `%` literal, `\*` a literal star
    ['host.hostname ~ "a_b"', ['g1', 'g5']],
    ['host.hostname ~ "a%b"', ['g3']],
    ['host.hostname ~ "a\\*b"', ['g4']],
    ['host.hostname ~ "a*b"', GLOBS],
    ['host.hostname ~ "*"', ALL],
    ['host.hostname = "A_B"', ['g5']],
    ['host.hostname = "a*b"', ['g4']],
    // values are data, never SQL
    [`host.hostname = "x'; DROP TABLE hosts; --"`, []],
    [`tag.env = "prod\\"}, \\"x\\": {\\"y"`, []],
  ];

  it.each(cases)('%s', async (q, expected) => {
    expect(await keys(q)).toEqual([...expected].sort());
  });

  it('answers the host fields of the spec, ordered by hostname, in pages', async () => {
    const { data } = await search(tokens.engA, 'host.os = "linux"');
    expect(data.map((h) => h.hostname)).toEqual(['db-01', 'db-02', 'web-01', 'web-02']);
    expect(data[2]).toEqual({
      id: ids.web1,
      hostname: 'web-01',
      ip_address: '10.0.0.11',
      os: 'linux',
      arch: 'amd64',
      agent_status: 'online',
      tags: { env: 'prod', team: 'web' },
    });
    const page2 = await sys.http({
      method: 'GET',
      url: `/api/v1/search?q=${enc('host.os = "linux"')}&page=2&per_page=3`,
      token: tokens.engA,
    });
    expectStatus(page2, 200);
    expect(page2.json()).toMatchObject({ data: [{ hostname: 'web-02' }], meta: { total: 4, page: 2, per_page: 3 } });
    const beyond = await sys.http({
      method: 'GET',
      url: `/api/v1/search?q=${enc('host.os = "linux"')}&page=9`,
      token: tokens.engA,
    });
    expect(beyond.json()).toEqual({ data: [], meta: { total: 4, page: 9, per_page: 20 } });
    expectStatus(
      await sys.http({
        method: 'GET',
        url: `/api/v1/search?q=${enc('host.os = "linux"')}&per_page=101`,
        token: tokens.engA,
      }),
      400,
    );
    expectStatus(
      await sys.http({ method: 'GET', url: `/api/v1/search?q=${enc('host.os = "linux"')}&page=0`, token: tokens.engA }),
      400,
    );
    expectStatus(
      await sys.http({
        method: 'GET',
        url: `/api/v1/search?q=${enc('host.os = "linux"')}&format=xml`,
        token: tokens.engA,
      }),
      400,
    );
  });

  it('answers invalid queries 400 with the parser message, at search, count and aggregate', async () => {
    const cases: [string, string][] = [
      ['host.cpu_cores = "4"', `expected a number for host.cpu_cores after '=' at position 18`],
      ['host.hostname = 42', `expected a quoted string for host.hostname after '=' at position 17`],
      ['label.region = ', `expected a value after '=' at position 16`],
      ['', 'the query is empty'],
      [
        'host.hostname > "a"',
        'operator > does not apply to host.hostname (a string field; it takes =, !=, ~, IN, NOT IN, EXISTS) at position 15',
      ],
    ];
    for (const [q, message] of cases) {
      for (const url of [
        `/api/v1/search?q=${enc(q)}`,
        `/api/v1/search/count?q=${enc(q)}`,
        `/api/v1/search/aggregate?q=${enc(q)}&group_by=host.os`,
      ]) {
        const res = await sys.http({ method: 'GET', url, token: tokens.engA });
        expectStatus(res, 400);
        expect(res.json().error).toMatchObject({ code: 'bad_request', message });
      }
    }
    const missing = await sys.http({ method: 'GET', url: '/api/v1/search/count', token: tokens.engA });
    expectStatus(missing, 400);
    expect(missing.json().error.message).toContain('querystring.q');
  });
});

describe('tenant isolation', () => {
  it('never counts, lists, aggregates or exports another client’s hosts', async () => {
    const q = 'tag.env = "prod"';
    expect(await keys(q, tokens.engA)).toEqual(['db1', 'web1', 'web2']);
    // Engineer on A with only hosts:read (no search:read) on B: still A only.
    expect(await keys(q, tokens.mixed)).toEqual(['db1', 'web1', 'web2']);
    const b = await search(tokens.engB, q);
    expect(b.data.map((h) => h.id).sort()).toEqual([bIds.bweb, bIds.bonly].sort());
    expect(await count(tokens.engB, q)).toBe(2);
    expect(await count(tokens.engC, q)).toBe(0);
    expect((await search(tokens.engC, q)).data).toEqual([]);

    const aggA = await sys.http({
      method: 'GET',
      url: `/api/v1/search/aggregate?q=${enc(q)}&group_by=host.hostname`,
      token: tokens.engA,
    });
    expect(aggA.json().data).toEqual([
      { value: 'db-01', count: 1 },
      { value: 'web-01', count: 1 },
      { value: 'web-02', count: 1 },
    ]);
    const aggB = await sys.http({
      method: 'GET',
      url: `/api/v1/search/aggregate?q=${enc(q)}&group_by=host.hostname`,
      token: tokens.engB,
    });
    expect(aggB.json().data).toEqual([
      { value: 'b-only', count: 1 },
      { value: 'web-01', count: 1 },
    ]);
    const csvB = await sys.http({ method: 'GET', url: `/api/v1/search?q=${enc(q)}&format=csv`, token: tokens.engB });
    expectStatus(csvB, 200);
    expect(csvB.body).toContain(bIds.bweb);
    for (const id of Object.values(ids)) expect(csvB.body).not.toContain(id);

    // A super admin reaches every client: both fleets, told apart by host.client.
    const both = `host.client IN ("${clientA.slug}", "${clientB.slug}") AND ${q}`;
    expect(await count(root, both)).toBe(5);
    expect(await count(root, `host.client = "${clientB.slug}"`)).toBe(2);
  });

  it('needs search:read (403) and a signed-in caller (401)', async () => {
    for (const [method, url] of [
      ['GET', `/api/v1/search?q=${enc('host.os = "linux"')}`],
      ['GET', `/api/v1/search/count?q=${enc('host.os = "linux"')}`],
      ['GET', '/api/v1/search/fields'],
      ['GET', `/api/v1/search/aggregate?q=${enc('host.os = "linux"')}&group_by=host.os`],
      ['POST', '/api/v1/search/validate'],
    ] as const) {
      const payload = method === 'POST' ? { query: 'host.os = "linux"' } : undefined;
      expectStatus(await api(sys, { token: tokens.viewerA })(method, url, payload), 403);
      expectStatus(await api(sys, {})(method, url, payload), 401);
    }
  });
});

describe('aggregate', () => {
  it('counts per host field value, the largest groups first', async () => {
    const agg = async (groupBy: string, q = 'host.hostname ~ "*"'): Promise<unknown> => {
      const res = await sys.http({
        method: 'GET',
        url: `/api/v1/search/aggregate?q=${enc(q)}&group_by=${enc(groupBy)}`,
        token: tokens.engA,
      });
      expectStatus(res, 200);
      return res.json().data;
    };
    expect(await agg('host.os')).toEqual([
      { value: 'bsd', count: 5 },
      { value: 'linux', count: 4 },
      { value: 'windows', count: 1 },
    ]);
    expect(await agg('os', 'host.os = "linux"')).toEqual([{ value: 'linux', count: 4 }]);
    expect(await agg('host.environment')).toEqual([
      { value: 'staging', count: 7 },
      { value: 'prod', count: 3 },
    ]);
    expect(await agg('host.cpu_cores', 'host.os = "linux"')).toEqual([
      { value: 4, count: 2 },
      { value: 8, count: 1 },
      { value: 16, count: 1 },
    ]);
    expect(await agg('host.memory_total_bytes', 'host.os = "windows"')).toEqual([{ value: 4 * 1024 ** 3, count: 1 }]);
    expect(await agg('host.last_seen_at', 'host.os = "linux"')).toEqual([
      { value: '2026-01-09T00:00:00.000Z', count: 1 },
      { value: '2026-01-10T09:00:00.000Z', count: 1 },
      { value: '2026-01-10T10:00:00.000Z', count: 1 },
      { value: null, count: 1 },
    ]);
    expect(await agg('tag.env')).toEqual([
      { value: null, count: 6 },
      { value: 'prod', count: 3 },
      { value: 'staging', count: 1 },
    ]);
    expect(await agg('label."app.kubernetes.io/name"', 'host.os = "linux"')).toEqual([
      { value: null, count: 3 },
      { value: 'frontend', count: 1 },
    ]);
    const limited = await sys.http({
      method: 'GET',
      url: `/api/v1/search/aggregate?q=${enc('host.hostname ~ "*"')}&group_by=host.os&limit=1`,
      token: tokens.engA,
    });
    expect(limited.json().data).toEqual([{ value: 'bsd', count: 5 }]);
    for (const bad of ['host.nope', 'service.name', 'tag.', '']) {
      const res = await sys.http({
        method: 'GET',
        url: `/api/v1/search/aggregate?q=${enc('host.os = "linux"')}&group_by=${enc(bad)}`,
        token: tokens.engA,
      });
      expectStatus(res, 400);
      expect(res.json().error.message).toContain('group_by');
    }
    expectStatus(
      await sys.http({
        method: 'GET',
        url: `/api/v1/search/aggregate?q=${enc('host.os = "linux"')}`,
        token: tokens.engA,
      }),
      400,
    );
  });
});

describe('fields and validate', () => {
  it('lists every field with its type and operators; tag and label fields are named *', async () => {
    const res = await sys.http({ method: 'GET', url: '/api/v1/search/fields', token: tokens.engA });
    expectStatus(res, 200);
    const fields = res.json().data as { prefix: string; name: string; type: string; operators: string[] }[];
    expect(fields).toContainEqual({
      prefix: 'tag',
      name: '*',
      type: 'string',
      operators: ['=', '!=', '~', 'IN', 'NOT IN', 'EXISTS'],
    });
    expect(fields).toContainEqual({
      prefix: 'label',
      name: '*',
      type: 'string',
      operators: ['=', '!=', '~', 'IN', 'NOT IN', 'EXISTS'],
    });
    expect(fields).toContainEqual({
      prefix: 'host',
      name: 'cpu_cores',
      type: 'number',
      operators: ['=', '!=', '>', '<', '>=', '<=', 'IN', 'NOT IN'],
    });
    expect(fields).toContainEqual({
      prefix: 'package',
      name: 'version',
      type: 'version',
      operators: ['=', '!=', '~', '>', '<', '>=', '<=', 'IN', 'NOT IN', 'EXISTS'],
    });
    expect(new Set(fields.map((f) => f.prefix))).toEqual(
      new Set(['host', 'label', 'tag', 'service', 'container', 'package']),
    );
    // Every listed field parses with each of its operators.
    for (const f of fields) {
      for (const op of f.operators) {
        const name = f.name === '*' ? `${f.prefix}.x` : `${f.prefix}.${f.name}`;
        const value = {
          string: '"a"',
          number: '1',
          version: '"1.0"',
          boolean: 'true',
          datetime: '"2026-01-01T00:00:00Z"',
        }[f.type as 'string'];
        const v = op === '~' ? '"a*"' : value;
        const q =
          op === 'EXISTS' ? `${name} EXISTS` : op.endsWith('IN') ? `${name} ${op} (${v}, ${v})` : `${name} ${op} ${v}`;
        const r = await api(sys, { token: tokens.engA })('POST', '/api/v1/search/validate', { query: q });
        expect(r.json().data, q).toEqual({ valid: true, error: '' });
      }
    }
  });

  it('validates with 200 either way, the error giving the position and what was expected', async () => {
    const call = api(sys, { token: tokens.engA });
    const ok = await call('POST', '/api/v1/search/validate', { query: 'host.os = "linux" AND tag.env = "prod"' });
    expectStatus(ok, 200);
    expect(ok.json().data).toEqual({ valid: true, error: '' });
    const bad = await call('POST', '/api/v1/search/validate', { query: 'label.region = ' });
    expectStatus(bad, 200);
    expect(bad.json().data).toEqual({ valid: false, error: `expected a value after '=' at position 16` });
    expectStatus(await call('POST', '/api/v1/search/validate', {}), 400);
    expectStatus(await call('POST', '/api/v1/search/validate', { query: 42 }), 400);
  });
});

describe('CSV export', () => {
  it('is a text/csv download whose formula-like cells are neutralised', async () => {
    const env = await insertEnvironment(sys, clientC.id, 'prod');
    const evil = ['=1+1', '+cmd', '-2+3', '@SUM(A1)', '\tTAB', '\rCR'];
    for (const [i, hostname] of evil.entries()) {
      await insertSearchHost(sys, env, {
        hostname,
        os: i === 0 ? '=HYPERLINK("http://evil")' : 'linux',
        ip_address: '10.9.9.9',
        tags: { note: '=1+2' },
      });
    }
    await insertSearchHost(sys, env, { hostname: 'plain, "quoted"', os: 'linux' });
    const res = await sys.http({
      method: 'GET',
      url: `/api/v1/search?q=${enc('host.hostname ~ "*"')}&format=csv`,
      token: tokens.engC,
    });
    expectStatus(res, 200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="hosts.csv"');
    expect(res.headers['x-total-count']).toBe('7');
    const body = res.body;
    expect(body.startsWith('id,hostname,ip_address,os,arch,agent_status,tags\r\n')).toBe(true);
    for (const h of evil) expect(body).toContain(`'${h}`);
    expect(body).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(body).toContain('"plain, ""quoted"""');
    // No cell starts with a formula character unless guarded: split records on CRLF outside quotes.
    const cells = parse(body) as string[][];
    expect(cells).toHaveLength(8);
    for (const row of cells.slice(1))
      for (const cell of row) expect(/^[=+\-@\t\r]/.test(cell), JSON.stringify(cell)).toBe(false);
    expect(cells.slice(1).map((r) => JSON.parse(r[6]!))).toContainEqual({ note: '=1+2' });

    const paged = await sys.http({
      method: 'GET',
      url: `/api/v1/search?q=${enc('host.hostname ~ "*"')}&format=csv&per_page=2&page=2`,
      token: tokens.engC,
    });
    expect(parse(paged.body) as string[][]).toHaveLength(3);
    expectStatus(
      await sys.http({
        method: 'GET',
        url: `/api/v1/search?q=${enc('host.hostname ~ "*"')}&format=csv&per_page=1001`,
        token: tokens.engC,
      }),
      400,
    );
    const invalid = await sys.http({
      method: 'GET',
      url: `/api/v1/search?q=${enc('host.hostname ~')}&format=csv`,
      token: tokens.engC,
    });
    expectStatus(invalid, 400);
    expect(invalid.headers['content-type']).toContain('application/json');
  });
});

describe('execution', () => {
  it('uses the GIN index for label/tag equality and the version index for package versions', async () => {
    const plan = async (q: string): Promise<string> => {
      const p = new Params();
      const where = compileWhere(parsePql(q), p);
      const orm = await sys.stores.orm();
      return readOnlySearch(orm, 5000, async (query) => {
        // The test tables are small: without this the planner would rightly read them whole.
        await query('SET LOCAL enable_seqscan = off', []);
        const rows = await query<{ 'QUERY PLAN': string }>(
          `EXPLAIN SELECT count(*) FROM hosts h WHERE ${where}`,
          p.values,
        );
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
    };
    expect(await plan('tag.env = "prod"')).toContain('hosts_tags_gin');
    expect(await plan('label.region IN ("eu-west", "us-east")')).toContain('hosts_labels_gin');
    expect(await plan('host.hostname ~ "WEB-*"')).toContain('hosts_search_idx');
    expect(await plan('host.hostname = "web-01"')).toContain('hosts_search_idx');
    // Either package index may serve it: which one depends on the table's statistics at the time (an ANALYZE of the
    // still-empty table at migration, or autovacuum's after the tests filled it), not on the compiled SQL.
    const packagePlan = await plan('package[name = "openssl" AND version < "3.0.13"]');
    expect(packagePlan).toMatch(/host_packages_(search|name)_idx/);
    expect(packagePlan).not.toContain('Seq Scan on host_packages');
  });

  it('samples the package columns finely for the planner (Migration0013)', async () => {
    // The default sample misjudged a condition on most hosts by 15×, and the first page then sorted every match.
    // (The default is -1, NULL since PostgreSQL 17.)
    const rows = await readOnlySearch(await sys.stores.orm(), 5000, (query) =>
      query<{ attname: string; target: number }>(
        `SELECT attname, COALESCE(attstattarget, -1)::int AS target FROM pg_attribute
          WHERE attrelid = 'host_packages'::regclass AND attname IN ('name', 'version_key', 'version') ORDER BY attname`,
        [],
      ),
    );
    expect(rows).toEqual([
      { attname: 'name', target: 1000 },
      { attname: 'version', target: -1 },
      { attname: 'version_key', target: 1000 },
    ]);
  });

  it('counts a lone record condition, or its NOT, from its table: the number the hosts form gives, every host once', async () => {
    // Each query has hosts with several matching records (every host runs many services, packages of several
    // versions), so a count of records instead of hosts would differ.
    const positive = [
      'package[name = "openssl" AND version < "3.0.13"]',
      'package.version >= "1.0"',
      'package[version EXISTS AND NOT name = "openssl"]',
      'service.name EXISTS',
      'service[active_state = "active" OR enabled = false]',
      'service.name != "sshd"',
      'container.image ~ "*:*"',
      'container[NOT state IN ("running")]',
    ];
    const queries = [...positive, ...positive.map((q) => `NOT ${q}`)];
    const orm = await sys.stores.orm();
    // Every host, one client's (the tenant filter of an engineer), and two clients'.
    const scopes: (string[] | undefined)[] = [undefined, [clientA.id], [clientA.id, clientB.id]];
    const seen = new Set<string>();
    for (const q of queries) {
      for (const clients of scopes) {
        const tree = parsePql(q);
        const general = new Params();
        const tenant = clients ? `h.client_id = ANY(${general.add(clients)}::uuid[])` : 'TRUE';
        const where = `${tenant} AND ${compileWhere(tree, general)}`;
        const record = new Params();
        const recordSql = recordCountSql(tree, record, clients);
        expect(recordSql, q).not.toBeNull();
        // One snapshot for both (other test files write hosts meanwhile).
        const [a, b, records] = await readOnlySearch(orm, 5000, async (query) => [
          (await query<{ n: number }>(`SELECT count(*)::int AS n FROM hosts h WHERE ${where}`, general.values))[0]!.n,
          (await query<{ n: number }>(recordSql!, record.values))[0]!.n,
          (
            await query<{ n: number }>(
              recordSql!.replace('SELECT DISTINCT r.host_id', 'SELECT r.host_id'),
              record.values,
            )
          )[0]!.n,
        ]);
        const what = `${q} for ${clients?.length ?? 'all'} clients`;
        expect(b, what).toBe(a);
        seen.add(`${q.startsWith('NOT') ? 'not' : 'positive'} ${a > 0 ? 'some' : 'none'} ${clients?.length ?? 'all'}`);
        if (q === 'service.name EXISTS') expect(records, what).toBeGreaterThan(a);
      }
    }
    // Both forms, in every scope, counted hosts (none of the queries is trivially 0 everywhere).
    for (const form of ['positive', 'not'])
      for (const n of ['all', '1', '2']) expect(seen.has(`${form} some ${n}`), `${form} ${n}`).toBe(true);
    // Count and list agree on it, as super admin and as an engineer; other shapes keep the hosts form.
    for (const q of ['package[name = "openssl" AND version < "3.0.13"]', 'NOT service.name = "nginx"'])
      for (const token of [root, tokens.engA])
        expect(await count(token, q), q).toBe((await search(token, q)).meta.total);
    for (const other of [
      'NOT NOT service.name = "nginx"',
      'package.name = "openssl" AND tag.env = "prod"',
      'NOT (service.name = "nginx" OR service.name = "sshd")',
      'host.os = "linux"',
      'NOT host.os = "linux"',
    ])
      expect(recordCountSql(parsePql(other), new Params()), other).toBeNull();
  });

  it('stops a statement at the search timeout with a clear 504', async () => {
    const orm = await sys.stores.orm();
    const err = await readOnlySearch(orm, 200, (query) => query('SELECT pg_sleep(2)', [])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({
      code: 'timeout',
      message: 'the search took longer than 0.2 s and was stopped; narrow the query',
    });
    const [settings] = await readOnlySearch(orm, 1000, (query) =>
      query<{ iso: string; ro: string; timeout: string }>(
        `SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro, current_setting('statement_timeout') AS timeout`,
        [],
      ),
    );
    expect(settings).toEqual({ iso: 'repeatable read', ro: 'on', timeout: '1s' });
    // Read-only: a search transaction cannot write.
    const write = await readOnlySearch(orm, 1000, (query) =>
      query(`UPDATE hosts SET hostname = hostname WHERE false`, []),
    ).catch((e: unknown) => e);
    expect((write as { code?: string }).code).toBe('25006');
  });

  it('orders package versions exactly as dpkg does', async () => {
    const versions = [
      '1.0',
      '1.0~rc1',
      '1.0~~',
      '1.0~',
      '1.0a',
      '1.0.0',
      '1.00',
      '0:1.0',
      '1:0.9',
      '1.0-1',
      '1.0-1~bpo1',
      '1.0+dfsg',
      '1.0-0',
      '2.36.1-8+deb12u1',
      '2.36-9',
      '3.0.13',
      '3.0.2',
      '3.0.13-0ubuntu3',
      '1:3.0.13-0ubuntu3.1',
      'a',
      'A',
      'a.b',
      'a+b',
      '10',
      '9',
      '009',
      '1.2.3-4-5',
      '1-2-3',
      '0',
      '~',
      '~~a',
      '1.0a~',
      '1.0A',
      '1.0.a',
      '1.0:a',
      '2:1',
      '1:1-1',
      '7.4.33-1+deb11u4',
      '1.18.0-6ubuntu14',
      '1.24.0-2ubuntu7',
    ];
    const orm = await sys.stores.orm();
    const rows = await readOnlySearch(orm, 5000, (query) =>
      query<{ v: string; k: string }>(`SELECT v, encode(pql_version_key(v), 'hex') AS k FROM unnest($1::text[]) AS v`, [
        versions,
      ]),
    );
    const key = new Map(rows.map((r) => [r.v, r.k]));
    for (const a of versions) {
      for (const b of versions) {
        const ka = key.get(a)!;
        const kb = key.get(b)!;
        const sqlOrder = ka < kb ? -1 : ka > kb ? 1 : 0;
        expect(sqlOrder, `${a} vs ${b}`).toBe(compareDebianVersions(a, b));
      }
    }
  });
});
