import { jetstream } from '@nats-io/jetstream';
import { fromPublic } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Heartbeat } from '../../contracts/domains/agent-telemetry.ts';
import { allStreams, streams } from '../../contracts/streams.ts';
import { BrokerIssuer } from '../../platform/broker/issuer.ts';
import { ensureStreams } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { EnrollError, enrollAgent } from '../../agent/enroll.ts';
import { readAgentState, statePaths } from '../../agent/state.ts';
import { NATS_CA, NATS_CREDS, NATS_FILES, NATS_URL } from '../support/env.ts';
import { waitFor } from '../support/processes.ts';

/**
 * Enrolment against a stand-in for the console's two enrolment routes (the real ones belong to the fleet domain):
 * it checks the signature over the challenge like the server must, and issues a real broker JWT, so the command
 * line can then run the enrolled agent against the real broker.
 */

const log = createLogger('silent');
const decoder = new TextDecoder();
let http: Server;
let baseUrl: string;
let issuer: BrokerIssuer;
let service: NatsConnection;
const dirs: string[] = [];
const challenges = new Map<string, { challenge: string; publicKey: string; badCa: boolean }>();
const enrolRequests: Record<string, unknown>[] = [];

const send = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};
const fail = (res: ServerResponse, status: number, code: string, message: string): void =>
  send(res, status, { error: { code, message, request_id: 'req-test-1' } });

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  const body = JSON.parse(text) as Record<string, string>;
  if (req.url === '/api/v1/agents/enroll') {
    enrolRequests.push(body);
    if (!['good-token', 'good-token-2', 'bad-ca-token'].includes(body.install_token!))
      return fail(res, 401, 'unauthorized', 'install token is invalid, expired or already used');
    const agentId = randomUUID();
    const challenge = randomUUID();
    challenges.set(agentId, { challenge, publicKey: body.public_key!, badCa: body.install_token === 'bad-ca-token' });
    return send(res, 200, { data: { agent_id: agentId, challenge } });
  }
  if (req.url === '/api/v1/agents/enroll/complete') {
    const pending = challenges.get(body.agent_id!);
    if (!pending || pending.challenge !== body.challenge) return fail(res, 400, 'bad_request', 'unknown challenge');
    const ok = fromPublic(pending.publicKey).verify(
      new TextEncoder().encode(pending.challenge),
      Buffer.from(body.signature!, 'base64url'),
    );
    if (!ok) return fail(res, 401, 'unauthorized', 'signature does not match the public key');
    const issued = await issuer.agent(body.agent_id!, pending.publicKey, 3600);
    return send(res, 200, {
      data: {
        agent_id: body.agent_id,
        host_id: randomUUID(),
        nats_servers: [NATS_URL],
        user_jwt: issued.jwt,
        inbox_prefix: issued.inboxPrefix,
        nats_ca: pending.badCa
          ? '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n'
          : readFileSync(NATS_CA, 'utf8'),
      },
    });
  }
  fail(res, 404, 'not_found', 'no such route');
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'agent-enrol-'));
  dirs.push(d);
  return d;
}

/** `npm run agent -- …` as a child process: its exit code and output. */
function cli(
  args: string[],
  opts: { until?: (stderr: string) => boolean; signalAfter?: boolean; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['agent/main.ts', ...args], {
      env: { ...process.env, SVC_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let signalled = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`agent ${args[0]} did not finish; stderr: ${stderr.slice(-2000)}`));
    }, opts.timeoutMs ?? 30_000);
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => {
      stderr += String(d);
      if (opts.until && !signalled && opts.until(stderr)) {
        signalled = true;
        child.kill('SIGTERM');
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  issuer = await BrokerIssuer.fromFiles(NATS_CREDS, NATS_FILES.issuerKey);
  service = await connectNats(NATS_URL, 'agent-enrol-test', log, NATS_CREDS, NATS_CA);
  await ensureStreams(service, allStreams);
  http = createServer(
    (req, res) => void handle(req, res).catch((err: unknown) => fail(res, 500, 'internal', String(err))),
  );
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => http?.close(r));
  await service?.drain();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('enrollAgent', () => {
  it('proves it holds the key, then writes agent.creds (600) and agent.json in a private directory', async () => {
    const dir = join(tempDir(), 'state');
    const result = await enrollAgent({
      server: `${baseUrl}/`,
      token: 'good-token',
      stateDir: dir,
      labels: { role: 'web' },
      hostname: 'web-1',
    });
    const state = await readAgentState(dir);
    expect(state).toMatchObject({
      agent_id: result.agent_id,
      host_id: result.host_id,
      nats_servers: [NATS_URL],
      inbox_prefix: `_INBOX.agent-${result.agent_id}`,
      labels: { role: 'web' },
    });
    expect(enrolRequests.at(-1)).toMatchObject({
      install_token: 'good-token',
      hostname: 'web-1',
      os: process.platform,
    });
    expect(String(enrolRequests.at(-1)!.public_key)).toMatch(/^U[A-Z0-9]{55}$/);
    const creds = readFileSync(statePaths(dir).creds, 'utf8');
    expect(creds).toContain('BEGIN NATS USER JWT');
    // The broker's CA from the reply, pinned for every connection (agent/connection.ts).
    expect(readFileSync(statePaths(dir).brokerCa, 'utf8')).toBe(readFileSync(NATS_CA, 'utf8'));
    expect(result.nats_ca_pinned).toBe(true);
    expect(creds).toMatch(/^SU[A-Z0-9]+$/m);
    // The seed is only on disk, never sent.
    const seed = /^(SU[A-Z0-9]+)$/m.exec(creds)![1]!;
    expect(JSON.stringify(enrolRequests)).not.toContain(seed);
    expect(statSync(statePaths(dir).creds).mode & 0o777).toBe(0o600);
    expect(statSync(statePaths(dir).agent).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it("passes on the server's error message and writes nothing", async () => {
    const dir = join(tempDir(), 'state');
    const err = await enrollAgent({ server: baseUrl, token: 'used-token', stateDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnrollError);
    expect(err).toMatchObject({
      message: 'install token is invalid, expired or already used',
      code: 'unauthorized',
      requestId: 'req-test-1',
      status: 401,
    });
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses a reply whose broker CA does not parse, and writes nothing', async () => {
    const dir = join(tempDir(), 'state');
    await expect(enrollAgent({ server: baseUrl, token: 'bad-ca-token', stateDir: dir })).rejects.toThrow(
      /nats_ca holds a certificate that does not parse/,
    );
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses bad input before calling anyone, and an already enrolled directory', async () => {
    await expect(enrollAgent({ server: 'not a url', token: 't', stateDir: tempDir() })).rejects.toThrow(
      /--server must be a URL/,
    );
    await expect(enrollAgent({ server: 'ftp://x', token: 't', stateDir: tempDir() })).rejects.toThrow(/http/);
    await expect(enrollAgent({ server: baseUrl, token: ' ', stateDir: tempDir() })).rejects.toThrow(
      /install token is required/,
    );
    await expect(
      enrollAgent({ server: baseUrl, token: 't', stateDir: tempDir(), labels: { '': 'x' } }),
    ).rejects.toThrow(/invalid labels/);
    const dir = tempDir();
    await enrollAgent({ server: baseUrl, token: 'good-token', stateDir: dir });
    await expect(enrollAgent({ server: baseUrl, token: 'good-token', stateDir: dir })).rejects.toThrow(
      /already holds an enrolled agent/,
    );
  });

  it('names an unreachable server', async () => {
    await expect(
      enrollAgent({ server: 'http://127.0.0.1:1', token: 'good-token', stateDir: tempDir(), timeoutMs: 2_000 }),
    ).rejects.toThrow(/cannot reach http:\/\/127\.0\.0\.1:1/);
  });
});

describe('command line', () => {
  it('enrol, run, and stop on SIGTERM with exit 0 after its heartbeat is stored', async () => {
    const dir = join(tempDir(), 'agent');
    const enrolled = await cli([
      'enroll',
      '--server',
      baseUrl,
      '--token',
      'good-token',
      '--state-dir',
      dir,
      '--label',
      'team=ops',
    ]);
    expect(enrolled.code, enrolled.stderr).toBe(0);
    const { agent_id } = JSON.parse(enrolled.stdout) as { agent_id: string };
    expect((await readAgentState(dir)).labels).toEqual({ team: 'ops' });

    const ran = await cli(['run', '--state-dir', dir, '--interval', '1'], {
      until: (err) => err.includes('"msg":"connected to the broker"') && err.split('\n').length > 3,
    });
    expect(ran.code, ran.stderr).toBe(0);
    // JSON lines on stderr, nothing on stdout.
    expect(ran.stdout).toBe('');
    const lines = ran.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['agent started', 'stopping', 'agent stopped']));

    await waitFor(
      async () => {
        const c = await jetstream(service).consumers.get(streams.SVC_TELEMETRY.name, {
          filter_subjects: `svc.agent.${agent_id}.heartbeat`,
        });
        const m = await c.next({ expires: 1_000 });
        return m !== null && Heartbeat.safeParse(JSON.parse(decoder.decode(m.data))).success;
      },
      10_000,
      "the CLI agent's heartbeat",
    );
  });

  it('prints the server message and exits 1 when enrolment is refused; exits 2 on usage errors', async () => {
    const refused = await cli(['enroll', '--server', baseUrl, '--token', 'nope', '--state-dir', join(tempDir(), 'x')]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('install token is invalid, expired or already used');
    expect(refused.stderr).toContain('req-test-1');

    const missing = await cli(['enroll', '--server', baseUrl, '--state-dir', tempDir()]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--token is required');
    const wrongCommand = await cli(['run', '--state-dir', tempDir(), '--token', 'x']);
    expect(wrongCommand.code).toBe(2);
    expect(wrongCommand.stderr).toContain('--token does not apply to run');
    const badInterval = await cli(['run', '--state-dir', tempDir(), '--interval', 'often']);
    expect(badInterval.code).toBe(2);
    const notEnrolled = await cli(['run', '--state-dir', tempDir()]);
    expect(notEnrolled.code).toBe(1);
    expect(notEnrolled.stderr).toContain('enrol first');
  });

  it('enrols a simulated fleet from a tokens file, one directory per agent, and resumes without re-enrolling', async () => {
    const dir = tempDir();
    const tokens = join(dir, 'tokens.txt');
    writeFileSync(tokens, 'good-token\n# a comment\ngood-token-2\n');
    const out = await cli([
      'enroll',
      '--simulate',
      '2',
      '--server',
      baseUrl,
      '--tokens-file',
      tokens,
      '--state-dir',
      dir,
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ enrolled: 2, skipped: 0, failed: [] });
    expect(
      enrolRequests
        .slice(-2)
        .map((r) => r.hostname)
        .sort(),
    ).toEqual(['sim-1', 'sim-2']);
    expect((await readAgentState(join(dir, 'sim-2'))).labels).toEqual({ simulated: 'true' });
    const again = await cli([
      'enroll',
      '--simulate',
      '2',
      '--server',
      baseUrl,
      '--tokens-file',
      tokens,
      '--state-dir',
      dir,
    ]);
    expect(JSON.parse(again.stdout)).toEqual({ enrolled: 0, skipped: 2, failed: [] });
    const tooFew = await cli([
      'enroll',
      '--simulate',
      '3',
      '--server',
      baseUrl,
      '--tokens-file',
      tokens,
      '--state-dir',
      dir,
    ]);
    expect(tooFew.code).toBe(1);
    expect(tooFew.stderr).toContain('needs 3 install tokens');
  });
});
