// The `search` part of the bench: PQL count and first page over a fleet of BENCH_SEARCH_HOSTS hosts (100,000) with
// realistic inventory, seeded straight into the bench database once and reused by later runs. Latency is measured
// through the console gateway over HTTP (gateway → NATS → fleet actor → PostgreSQL), one request at a time, for a
// super admin (every host) and for an engineer on 10 of the 60 bench clients (the tenant filter).
import { randomUUID } from 'node:crypto';
import argon2 from 'argon2';
import { generateSecret } from 'otplib';
import { AccessTokens, SecretBox } from '../actors/identity/crypto.ts';
import { roleIdByName } from '../actors/identity/permissions.ts';
import type { Config } from '../platform/config.ts';
import type { Stores } from '../platform/stores/index.ts';
import { perRequest } from './cpu.ts';
import { percentile } from './stats.ts';
import { checkpoint } from './checkpoint.ts';

const HOSTS = Math.max(100, Number(process.env.BENCH_SEARCH_HOSTS ?? 100_000));
/** Packages per Linux host; servers have hundreds to a few thousand. */
const PACKAGES = Math.max(20, Number(process.env.BENCH_SEARCH_PACKAGES ?? 200));
/** Timed requests per query and kind, after warm-up. */
const SAMPLES = Math.max(10, Number(process.env.BENCH_SEARCH_SAMPLES ?? 60));
const BATCH = 2_000;
const TARGET = { count: 100, page: 150 };

/** Five typical queries: an equality, a glob, a version comparison, a negation and a combination. */
export const BENCH_QUERIES: readonly { name: string; q: string }[] = [
  { name: 'tag equality', q: 'tag.team = "payments"' },
  { name: 'glob on hostname', q: 'host.hostname ~ "web-euw1-*"' },
  { name: 'package version comparison', q: 'package[name = "openssl" AND version < "3.0.13"]' },
  { name: 'NOT over services', q: 'NOT service.name = "nginx"' },
  {
    name: 'three-way AND/OR',
    q: 'tag.env = "prod" AND (label.region = "eu-west-1" OR label.region = "eu-central-1") AND host.cpu_cores >= 8',
  },
];

export interface SearchBenchDeps {
  config: Config;
  stores: Stores;
  /** Super admin's token (run.ts's seed). */
  token: string;
  /** Starts (once) the single-process system and resolves when its gateway answers. */
  ensureSystem: () => Promise<unknown>;
  gatewayPort: number;
  /** Starts metering the system's processes and PostgreSQL; the result gives each one's CPU ms since. */
  systemCpu?: () => () => Record<string, number>;
}

export interface QueryFigures {
  query: string;
  q: string;
  matches: number;
  /** CPU ms per request (counts and pages alike) of the system's process and PostgreSQL. */
  cpuMsPerRequest?: Record<string, number>;
  count: { p50: number; p95: number };
  page: { p50: number; p95: number };
}

// Inline SQL pieces of the seed. `g` is the host's sequence number; everything about a host derives from it, so the
// inventory statements find the same host (and role) again without reading it back.
const HASH = (salt: string): string => `(hashtext('${salt}' || g::text) & 2147483647)`;
const ROLE = `(ARRAY['web','web','web','api','api','worker','worker','db','cache','k8s'])[1 + ${HASH('role')} % 10]`;
const REGION = `(ARRAY['eu-west-1','eu-central-1','us-east-1','us-west-2','ap-southeast-1','sa-east-1'])[1 + g % 6]`;
const REGION_SHORT = `(ARRAY['euw1','euc1','use1','usw2','apse1','sae1'])[1 + g % 6]`;
/** A version-4-shaped uuid from a seed text (the API's schemas accept RFC 4122 ids only). */
const UUID_OF = (seed: string): string =>
  `(SELECT (substr(m, 1, 12) || '4' || substr(m, 14, 3) || '8' || substr(m, 18))::uuid FROM md5(${seed}) m)`;
const HOST_ID = UUID_OF(`'bsrch-host-' || g::text`);
/** The names the seed gives: role-region-b<sequence number>. */
const SEEDED_NAME = '^[a-z0-9]+-[a-z0-9]+-b[0-9]+$';
const IS_WINDOWS = `(${HASH('os')} % 20 = 0)`;
const TEAMS = `ARRAY['payments','checkout','search','identity','data','platform','mobile','ads','billing','growth','infra','security']`;

async function seed(deps: SearchBenchDeps): Promise<void> {
  const orm = await deps.stores.orm();
  const conn = orm.em.fork().getConnection();
  const exec = (sql: string, params: unknown[] = []): Promise<unknown> => conn.execute(sql, params);
  const [marker] = await conn
    .execute<{ hosts: string; packages: string }[]>(
      `SELECT (SELECT count(*) FROM hosts WHERE hostname ~ '${SEEDED_NAME}') AS hosts, (SELECT value FROM bench_search_meta WHERE key = 'packages') AS packages`,
    )
    .catch(() => [{ hosts: '0', packages: '' }]);
  if (Number(marker?.hosts) === HOSTS && marker?.packages === String(PACKAGES)) {
    console.log(`search: reusing the seeded fleet (${HOSTS} hosts, ${PACKAGES} packages each)`);
    // What autovacuum would have done since (it is off on this machine): the fleet part's heartbeats and snapshots
    // leave dead rows in these tables (two thirds of hosts' rows after one run), and every count walked them.
    await exec(`VACUUM ANALYZE hosts, environments, host_services, host_packages, host_containers`);
    await checkpoint(exec);
    return;
  }
  console.log(
    `search: seeding ${HOSTS} hosts with ${PACKAGES} packages each into the bench database (once; later runs reuse it)…`,
  );
  const started = Date.now();
  await exec(`CREATE TABLE IF NOT EXISTS bench_search_meta (key text PRIMARY KEY, value text NOT NULL)`);
  await exec(`DELETE FROM bench_search_meta`);
  // A fleet of another size: start again (inventory goes with its hosts).
  await exec(
    `DELETE FROM hosts h WHERE hostname ~ '${SEEDED_NAME}' AND id = ${UUID_OF(`'bsrch-host-' || substring(h.hostname FROM '-b([0-9]+)$')`)}`,
  );
  await exec(
    `INSERT INTO environments (id, client_id, name, slug)
     SELECT ${UUID_OF(`'bsrch-env-' || c.id || '-' || k`)}, c.id, k, 'bsrch-' || k FROM clients c, unnest(ARRAY['prod', 'staging', 'dev']) k
      WHERE c.slug ~ '^bench-[0-9]+$' ON CONFLICT DO NOTHING`,
  );
  for (let lo = 1; lo <= HOSTS; lo += BATCH) {
    const hi = Math.min(HOSTS, lo + BATCH - 1);
    // Statement by statement: an interrupted seed leaves no marker, and the next run starts again.
    {
      await exec(
        `WITH c AS (SELECT array_agg(id ORDER BY slug) AS ids FROM clients WHERE slug ~ '^bench-[0-9]+$'),
              x AS (SELECT g, c.ids[1 + g % array_length(c.ids, 1)] AS client_id, ${ROLE} AS role,
                           CASE WHEN ${HASH('env')} % 10 < 7 THEN 'prod' WHEN ${HASH('env')} % 10 < 9 THEN 'staging' ELSE 'dev' END AS env
                      FROM generate_series(?::int, ?::int) g, c)
         INSERT INTO hosts (id, environment_id, client_id, hostname, ip_address, os, os_version, kernel_version, arch, cpu_cores, memory_total_bytes,
                            agent_status, agent_version, last_seen_at, tags, labels)
         SELECT ${HOST_ID}, ${UUID_OF(`'bsrch-env-' || client_id || '-' || env`)}, client_id,
                role || '-' || ${REGION_SHORT} || '-b' || g::text,
                '10.' || (g / 65536) % 256 || '.' || (g / 256) % 256 || '.' || g % 256,
                CASE WHEN ${IS_WINDOWS} THEN 'windows' ELSE 'linux' END,
                CASE WHEN ${IS_WINDOWS} THEN '10.0.20348' ELSE (ARRAY['20.04','22.04','22.04','24.04','24.04','12'])[1 + ${HASH('osv')} % 6] END,
                CASE WHEN ${IS_WINDOWS} THEN '' ELSE (ARRAY['5.4.0-182-generic','5.15.0-113-generic','6.8.0-40-generic','6.1.0-23-amd64'])[1 + ${HASH('k')} % 4] END,
                CASE WHEN ${HASH('arch')} % 7 = 0 THEN 'arm64' ELSE 'amd64' END,
                (ARRAY[2, 4, 4, 8, 8, 16, 32, 64])[1 + ${HASH('cpu')} % 8],
                (ARRAY[4, 8, 16, 16, 32, 64, 128, 256])[1 + ${HASH('cpu')} % 8]::bigint * 1073741824,
                CASE WHEN ${HASH('st')} % 10 < 8 THEN 'online' ELSE 'offline' END,
                (ARRAY['1.3.9','1.4.2','1.4.10','1.5.0'])[1 + ${HASH('av')} % 4],
                now() - make_interval(secs => ${HASH('seen')} % 86400),
                jsonb_build_object('env', env, 'team', (${TEAMS})[1 + ${HASH('team')} % 12], 'tier', (1 + ${HASH('tier')} % 3)::text, 'cost_center', 'cc-' || ${HASH('cc')} % 40),
                jsonb_build_object('region', ${REGION}, 'az', ${REGION} || (ARRAY['a','b','c'])[1 + g % 3], 'role', role)
                  || CASE WHEN role = 'k8s' THEN jsonb_build_object('app.kubernetes.io/name', 'node', 'node.kubernetes.io/pool', 'pool-' || g % 5) ELSE '{}'::jsonb END
           FROM x`,
        [lo, hi],
      );
      // Services: a base set every Linux host runs, and the role's own.
      await exec(
        `INSERT INTO host_services (host_id, name, description, load_state, active_state, sub_state, enabled, main_pid, manager)
         SELECT ${HOST_ID}, s, '', 'loaded',
                CASE WHEN (hashtext(s || g::text) & 2147483647) % 200 = 0 THEN 'failed' WHEN s = 'apt-daily' THEN 'inactive' ELSE 'active' END,
                CASE WHEN (hashtext(s || g::text) & 2147483647) % 200 = 0 THEN 'failed' WHEN s = 'apt-daily' THEN 'dead' ELSE 'running' END,
                s <> 'apt-daily', NULL, 'systemd'
           FROM generate_series(?::int, ?::int) g
           CROSS JOIN LATERAL unnest(
             ARRAY['sshd','cron','rsyslog','systemd-journald','systemd-logind','systemd-networkd','systemd-resolved','systemd-timesyncd','dbus','chrony',
                   'polkit','udisks2','unattended-upgrades','apt-daily','getty@tty1','serial-getty@ttyS0','multipathd','snapd','node-exporter','svc-agent',
                   'containerd','auditd','fail2ban','ufw']
             || CASE ${ROLE} WHEN 'web' THEN ARRAY['nginx','php8.1-fpm'] WHEN 'api' THEN ARRAY['nginx','app-api','pgbouncer'] WHEN 'worker' THEN ARRAY['app-worker','celery']
                             WHEN 'db' THEN ARRAY['postgresql','pgbackrest','postgres-exporter'] WHEN 'cache' THEN ARRAY['redis-server','redis-sentinel']
                             ELSE ARRAY['kubelet','kube-proxy'] END) s
          WHERE NOT ${IS_WINDOWS}`,
        [lo, hi],
      );
      // Packages: well-known ones with a handful of versions each, and fillers up to PACKAGES.
      await exec(
        `INSERT INTO host_packages (host_id, name, version, architecture, manager, description, installed_size_bytes)
         SELECT ${HOST_ID}, p.name, p.version, CASE WHEN ${HASH('arch')} % 7 = 0 THEN 'arm64' ELSE 'amd64' END, 'apt', '', 100000
           FROM generate_series(?::int, ?::int) g
           CROSS JOIN LATERAL (
             SELECT 'openssl' AS name, (ARRAY['3.0.2-0ubuntu1.10','3.0.2-0ubuntu1.15','3.0.13-0ubuntu3.1','3.0.11-1~deb12u2','1.1.1f-1ubuntu2.22'])[1 + ${HASH('ossl')} % 5] AS version
             UNION ALL SELECT 'libc6', (ARRAY['2.31-0ubuntu9.16','2.35-0ubuntu3.8','2.39-0ubuntu8.3','2.36-9+deb12u7'])[1 + ${HASH('libc')} % 4]
             UNION ALL SELECT 'openssh-server', (ARRAY['1:8.2p1-4ubuntu0.11','1:8.9p1-3ubuntu0.10','1:9.6p1-3ubuntu13.5','1:9.2p1-2+deb12u3'])[1 + ${HASH('ssh')} % 4]
             UNION ALL SELECT 'nginx', (ARRAY['1.18.0-0ubuntu1.4','1.18.0-6ubuntu14.4','1.24.0-2ubuntu7'])[1 + ${HASH('ngx')} % 3] WHERE ${ROLE} IN ('web', 'api')
             UNION ALL SELECT 'postgresql-16', (ARRAY['16.2-1','16.4-1.pgdg22.04+1','16.6-0ubuntu0.24.04.1'])[1 + ${HASH('pg')} % 3] WHERE ${ROLE} = 'db'
             UNION ALL SELECT 'redis-server', (ARRAY['5:6.0.16-1ubuntu1','5:7.0.15-1'])[1 + ${HASH('rds')} % 2] WHERE ${ROLE} = 'cache'
             UNION ALL SELECT 'lib' || (ARRAY['xml2','ssl3','curl4','zstd1','lzma5','pcre2','gnutls30','systemd0','sqlite3-0','ncursesw6'])[1 + n % 10] || '-b' || n,
                              (n % 5) || '.' || ((hashtext(n::text || (g % 7)::text) & 2147483647) % 20) || '.' || ((hashtext(n::text || (g % 3)::text) & 2147483647) % 9) || '-' || (1 + n % 4)
               FROM generate_series(1, ?::int) n
           ) p
          WHERE NOT ${IS_WINDOWS}`,
        [lo, hi, Math.max(0, PACKAGES - 6)],
      );
      // Containers on web, api and k8s hosts.
      await exec(
        `INSERT INTO host_containers (host_id, container_id, name, image, state, status, runtime, created_at, labels)
         SELECT ${HOST_ID}, md5(g::text || '-' || k), 'app-' || k,
                (ARRAY['nginx:1.25','redis:7.2','ghcr.io/acme/api:2.14.1','ghcr.io/acme/worker:2.14.1','envoyproxy/envoy:v1.29','prom/node-exporter:v1.8.1'])[1 + (hashtext(g::text || k) & 2147483647) % 6],
                CASE WHEN (hashtext(k || g::text) & 2147483647) % 10 = 0 THEN 'exited' ELSE 'running' END, '',
                CASE WHEN ${ROLE} = 'k8s' THEN 'containerd' ELSE 'docker' END, now(), '{}'::jsonb
           FROM generate_series(?::int, ?::int) g
           CROSS JOIN LATERAL generate_series(1, 1 + ${HASH('ctr')} % 8) k
          WHERE ${ROLE} IN ('web', 'api', 'k8s')`,
        [lo, hi],
      );
    }
    if (hi % 20_000 === 0 || hi === HOSTS)
      console.log(`search: ${hi} hosts seeded (${Math.round((Date.now() - started) / 1000)} s)`);
  }
  // Statistics for the planner, and the visibility map for index-only scans.
  await exec(`VACUUM ANALYZE hosts, environments, host_services, host_packages, host_containers`);
  await exec(`INSERT INTO bench_search_meta (key, value) VALUES ('packages', ?)`, [String(PACKAGES)]);
  await checkpoint(exec);
  console.log(`search: seeded in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** An engineer (MFA enrolled, as every protected route needs) on 10 of the 60 bench clients, and a token for it. */
async function scopedEngineer(deps: SearchBenchDeps): Promise<string> {
  const orm = await deps.stores.orm();
  const conn = orm.em.fork().getConnection();
  const id = randomUUID();
  const email = `bench-search-${id.slice(0, 8)}@example.com`;
  await conn.execute(
    `INSERT INTO users (id, email, display_name, status, password_hash, mfa_enabled, mfa_secret_enc) VALUES (?, ?, 'Bench search', 'active', ?, true, ?)`,
    [
      id,
      email,
      await argon2.hash(randomUUID(), { type: argon2.argon2id }),
      new SecretBox(deps.config.SVC_MFA_ENCRYPTION_KEY!).seal(generateSecret()),
    ],
  );
  await conn.execute(
    `INSERT INTO user_client_roles (user_id, client_id, role_id) SELECT ?, id, ? FROM clients WHERE slug ~ '^bench-[0-9]+$' ORDER BY slug LIMIT 10`,
    [id, roleIdByName('Engineer')],
  );
  const sessionId = randomUUID();
  await conn.execute(
    `INSERT INTO sessions (id, user_id, last_active_at, expires_at) VALUES (?, ?, now(), now() + interval '1 day')`,
    [sessionId, id],
  );
  return new AccessTokens(deps.config.SVC_JWT_SECRET!, 3600).sign({ sub: id, sid: sessionId, email });
}

/** Milliseconds of one request; anything but 200 stops the bench. */
async function timed(url: string, token: string): Promise<{ ms: number; body: unknown }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  const body: unknown = await res.json();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(body)}`);
  return { ms, body };
}

async function measure(
  base: string,
  token: string,
  systemCpu?: () => () => Record<string, number>,
): Promise<QueryFigures[]> {
  const out: QueryFigures[] = [];
  for (const { name, q } of BENCH_QUERIES) {
    const countUrl = `${base}/api/v1/search/count?q=${encodeURIComponent(q)}`;
    const pageUrl = `${base}/api/v1/search?q=${encodeURIComponent(q)}&per_page=20`;
    for (let i = 0; i < 5; i++) await Promise.all([timed(countUrl, token), timed(pageUrl, token)]);
    const counts: number[] = [];
    const pages: number[] = [];
    let matches = 0;
    const meter = systemCpu?.();
    // Interleaved, one request at a time: latency, not throughput.
    for (let i = 0; i < SAMPLES; i++) {
      const c = await timed(countUrl, token);
      counts.push(c.ms);
      matches = (c.body as { data: { count: number } }).data.count;
      pages.push((await timed(pageUrl, token)).ms);
    }
    const cpu = meter ? perRequest(meter, 2 * SAMPLES) : undefined;
    counts.sort((a, b) => a - b);
    pages.sort((a, b) => a - b);
    out.push({
      query: name,
      q,
      matches,
      ...(cpu ? { cpuMsPerRequest: cpu } : {}),
      count: { p50: percentile(counts, 50), p95: percentile(counts, 95) },
      page: { p50: percentile(pages, 50), p95: percentile(pages, 95) },
    });
  }
  return out;
}

function table(title: string, rows: QueryFigures[]): string {
  const head = ['query', 'matches', 'count p50', 'count p95', 'page p50', 'page p95'];
  const ok = (v: number, target: number): string => `${v.toFixed(1)}${v <= target ? '' : ' !'}`;
  const lines = rows.map((r) => [
    r.query,
    String(r.matches),
    r.count.p50.toFixed(1),
    ok(r.count.p95, TARGET.count),
    r.page.p50.toFixed(1),
    ok(r.page.p95, TARGET.page),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [title, line(head), ...lines.map(line)].join('\n');
}

export interface SearchFigures {
  hosts: number;
  packagesPerHost: number;
  samples: number;
  superAdmin: QueryFigures[];
  engineer: QueryFigures[];
}

export async function searchBench(deps: SearchBenchDeps): Promise<SearchFigures> {
  await seed(deps);
  await deps.ensureSystem();
  const base = `http://127.0.0.1:${deps.gatewayPort}`;
  const admin = await measure(base, deps.token, deps.systemCpu);
  const engineer = await measure(base, await scopedEngineer(deps), deps.systemCpu);
  console.log(
    `\n## search: PQL over ${HOSTS} hosts (${PACKAGES} packages, ~26 services, containers on web/api/k8s hosts), ${SAMPLES} sequential requests each, ms`,
  );
  console.log(`targets: count p95 ≤ ${TARGET.count} ms, first page p95 ≤ ${TARGET.page} ms ('!' marks a miss)`);
  for (const { q, name } of BENCH_QUERIES) console.log(`  ${name}: ${q}`);
  console.log(table('\nsuper admin (every host):', admin));
  console.log(table('\nengineer on 10 of 60 clients:', engineer));
  return { hosts: HOSTS, packagesPerHost: PACKAGES, samples: SAMPLES, superAdmin: admin, engineer };
}
