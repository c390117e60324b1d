import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageAgent, type AgentPackage } from '../../scripts/agent-package.ts';
import { createClient } from '../support/identity.ts';
import { stopProcess, waitFor } from '../support/processes.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, type Method } from '../identity/admin-support.ts';

/**
 * `npm run agent:package` end to end: the executable and the .deb are built, the .deb is unpacked as dpkg would lay
 * it out, and the unpacked executable runs as a host would run it (no node on its PATH, no checkout, no
 * node_modules): it enrols against the running system, its host goes online with facts and metrics, and it stops
 * being seen once revoked.
 */

const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
let built: AgentPackage;
let out: string;
let rootfs: string;
let sys: TestSystem;
let call: (method: Method, url: string, payload?: unknown) => ReturnType<ReturnType<typeof api>>;
let baseUrl: string;
const children: ChildProcess[] = [];

/** A PATH with every command of /usr/bin and /bin but node (and npm, npx): what a host without Node has. */
function pathWithoutNode(): string {
  const dir = mkdtempSync(join(tmpdir(), 'no-node-bin-'));
  for (const from of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    for (const name of readdirSync(from)) {
      if (/^(node|nodejs|npm|npx|corepack)$/.test(name)) continue;
      try {
        symlinkSync(join(from, name), join(dir, name));
      } catch {
        // the same name from an earlier directory wins, as on a PATH
      }
    }
  }
  return dir;
}

/** `[section]` → key → values (a key may repeat), as systemd reads a unit file. */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const unit: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      unit[section] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0 || section === '') throw new Error(`not a unit-file line: ${JSON.stringify(raw)}`);
    ((unit[section] ??= {})[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  return unit;
}

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'agent-package-'));
  built = await packageAgent(out);
  rootfs = join(out, 'rootfs');
  mkdirSync(rootfs);
  execFileSync('dpkg-deb', ['-x', built.deb, rootfs]);
}, 600_000);

afterAll(async () => {
  for (const c of children) await stopProcess(c);
  await sys?.stop();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('npm run agent:package', () => {
  it('builds the executable, the .deb and their checksums', () => {
    expect(built.executable).toBe(join(out, `svc-agent-${version}-linux-x64`));
    expect(built.deb).toBe(join(out, `svc-agent_${version}_amd64.deb`));
    expect(execFileSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: out, encoding: 'utf8' })).toMatch(
      new RegExp(`svc-agent-${version}-linux-x64: OK\\nsvc-agent_${version}_amd64.deb: OK`),
    );
    const control = execFileSync('dpkg-deb', ['-f', built.deb], { encoding: 'utf8' });
    expect(control).toMatch(/^Package: svc-agent$/m);
    expect(control).toMatch(new RegExp(`^Version: ${version.replace(/\./g, '\\.')}$`, 'm'));
    expect(control).toMatch(/^Architecture: amd64$/m);
  });

  it('lays out the executable, the unit, the defaults file and the maintainer scripts', () => {
    expect(statSync(join(rootfs, 'usr/bin/svc-agent')).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(rootfs, 'usr/bin/svc-agent')).equals(readFileSync(built.executable))).toBe(true);
    expect(readFileSync(join(rootfs, 'etc/default/svc-agent'), 'utf8')).toMatch(/^SVC_AGENT_ARGS=/m);
    const unit = parseUnit(readFileSync(join(rootfs, 'usr/lib/systemd/system/svc-agent.service'), 'utf8'));
    expect(unit.Service).toMatchObject({
      User: ['svc-agent'],
      Restart: ['always'],
      StateDirectory: ['svc-agent'],
      StateDirectoryMode: ['0700'],
      NoNewPrivileges: ['yes'],
      ProtectSystem: ['strict'],
      EnvironmentFile: ['-/etc/default/svc-agent'],
    });
    // The freshly written executable's cached pages are dropped before each start (see the unit's comment).
    expect(unit.Service!.ExecStartPre).toEqual([
      '-/usr/bin/sync --data /usr/bin/svc-agent',
      '-/usr/bin/dd if=/usr/bin/svc-agent iflag=nocache count=0 status=none',
    ]);
    expect(unit.Service!.ExecStart![0]).toMatch(
      /^\/usr\/bin\/svc-agent run --state-dir \/var\/lib\/svc-agent \$SVC_AGENT_ARGS$/,
    );
    expect(unit.Install).toMatchObject({ WantedBy: ['multi-user.target'] });

    const control = join(out, 'control');
    execFileSync('dpkg-deb', ['-e', built.deb, control]);
    expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe('/etc/default/svc-agent\n');
    for (const script of ['postinst', 'prerm', 'postrm']) {
      const file = join(control, script);
      expect(statSync(file).mode & 0o777).toBe(0o755);
      execFileSync('bash', ['-n', file]);
      execFileSync('sh', ['-n', file]);
    }
    // postinst creates the user and enables the unit, and enrols only when the operator's environment asks.
    const postinst = readFileSync(join(control, 'postinst'), 'utf8');
    expect(postinst).toMatch(/adduser --system/);
    expect(postinst).toMatch(/systemctl enable svc-agent\.service/);
    expect(postinst).toMatch(/SVC_AGENT_TOKEN/);
  });

  describe('the unpacked executable on a host without Node', () => {
    let hostPath: string;
    let cwd: string;
    let stateDir: string;
    let agentId: string;
    let hostId: string;
    const exe = (): string => join(rootfs, 'usr/bin/svc-agent');
    const hostEnv = (): NodeJS.ProcessEnv => ({ PATH: hostPath, HOME: cwd, SVC_LOG_LEVEL: 'warn' });

    beforeAll(async () => {
      hostPath = pathWithoutNode();
      cwd = mkdtempSync(join(tmpdir(), 'agent-host-'));
      stateDir = join(cwd, 'state');
      let root: string;
      ({ sys, root } = await startAdminSystem({ SVC_AGENT_STALE_TIMEOUT_SECONDS: '2' }));
      call = api(sys, { token: root });
      await sys.console!.listen({ host: '127.0.0.1', port: 0 });
      baseUrl = `http://127.0.0.1:${(sys.console!.server.address() as AddressInfo).port}`;
    }, 120_000);

    it('has no node to lean on, and prints its version', () => {
      expect(() => execFileSync('sh', ['-c', 'command -v node'], { env: hostEnv(), cwd })).toThrow();
      const run = spawnSync(exe(), ['--version'], { env: hostEnv(), cwd, encoding: 'utf8' });
      expect(run.stdout.trim()).toBe(version);
      // Nothing on stderr: no experimental-feature warning, and V8 accepted the embedded code cache (a cache made
      // under other V8 flags than the executable's is rejected, with a warning).
      expect(run.stderr).toBe('');
    });

    it('enrols, runs, and its host goes online with facts and metrics', async () => {
      const clientId = (await createClient(sys)).id;
      const env = await call('POST', `/api/v1/clients/${clientId}/environments`, {
        name: 'Production',
        slug: 'production',
      });
      expectStatus(env, 201);
      const envId = (env.json() as { data: { id: string } }).data.id;
      const tokenRes = await call('POST', `/api/v1/environments/${envId}/install-tokens`, {});
      expectStatus(tokenRes, 201);
      const token = (tokenRes.json() as { data: { token: string } }).data.token;

      // Asynchronously: the console answering it runs on this process's event loop.
      const { stdout: enrolled } = await promisify(execFile)(
        exe(),
        ['enroll', '--server', baseUrl, '--token', token, '--state-dir', stateDir],
        { env: hostEnv(), cwd, encoding: 'utf8', timeout: 60_000 },
      );
      ({ agent_id: agentId, host_id: hostId } = JSON.parse(enrolled) as { agent_id: string; host_id: string });
      expect(statSync(stateDir).mode & 0o777).toBe(0o700);

      const child = spawn(exe(), ['run', '--state-dir', stateDir, '--interval', '1', '--inventory-interval', '3'], {
        env: hostEnv(),
        cwd,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      children.push(child);
      const host = async (): Promise<Record<string, unknown>> => {
        const res = await call('GET', `/api/v1/hosts/${hostId}`);
        expectStatus(res, 200);
        return (res.json() as { data: Record<string, unknown> }).data;
      };
      await waitFor(async () => (await host()).agent_status === 'online', 60_000, 'host online');
      const h = await host();
      expect(h).toMatchObject({ id: hostId, agent_id: agentId, environment_id: envId, client_id: clientId });
      expect(Number(h.cpu_cores)).toBeGreaterThan(0);
      expect(String(h.kernel_version)).toBe(execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim());
      await waitFor(
        async () => {
          // The system's clock is the test's (it stands still): "latest" looks back from it, at samples stamped now.
          sys.clock.set(Date.now());
          const res = await call(
            'GET',
            `/api/v1/hosts/metrics/latest?host_ids=${hostId}&metrics=cpu_usage_percent,memory_usage_percent`,
          );
          return res.statusCode === 200 && (res.json() as { data: unknown[] }).data.length === 2;
        },
        60_000,
        'cpu and memory metrics stored',
      );
      await waitFor(
        async () => {
          const res = await call('GET', `/api/v1/hosts/${hostId}/packages`);
          return (
            res.statusCode === 200 && (res.json() as { data: { name: string }[] }).data.some((p) => p.name === 'bash')
          );
        },
        60_000,
        'inventory snapshot',
      );
      // The footprint settings are in effect: one V8 worker (the executable's --v8-pool-size=1) and two libuv pool
      // threads (agent/thread-pool-size.ts), where an unbundled node has one V8 worker per core and four pool threads.
      const threads = readdirSync(`/proc/${child.pid}/task`).map((t) =>
        readFileSync(`/proc/${child.pid}/task/${t}/comm`, 'utf8').trim(),
      );
      expect(threads.filter((t) => t === 'V8Worker')).toHaveLength(1);
      expect(threads.filter((t) => t === 'libuv-worker').length).toBeLessThanOrEqual(2);
    }, 240_000);

    it('is no longer seen once revoked', async () => {
      expectStatus(await call('DELETE', `/api/v1/agents/${agentId}`), 204);
      sys.clock.advance(2_500);
      const host = async (): Promise<{ agent_status: string; last_seen_at: string }> =>
        (await call('GET', `/api/v1/hosts/${hostId}`)).json().data as { agent_status: string; last_seen_at: string };
      await waitFor(async () => (await host()).agent_status === 'offline', 30_000, 'offline after revocation');
      const seen = (await host()).last_seen_at;
      await new Promise((r) => setTimeout(r, 3_000));
      expect((await host()).last_seen_at).toBe(seen);
    }, 60_000);
  });
});
