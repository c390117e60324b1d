import { fmtCreds } from '@nats-io/jwt';
import { createUser } from '@nats-io/nkeys';
import { connect } from '@nats-io/transport-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBrokerCertificates, TLS_FILES } from '../../platform/broker/certificates.ts';
import { BrokerIssuer } from '../../platform/broker/issuer.ts';
import { brokerAuth, brokerTls, LazyNats } from '../../platform/nats.ts';
import { AgentCredentials, AgentLink } from '../../agent/connection.ts';
import { writeCredsFile } from '../../agent/state.ts';
import { capturingLogger } from '../support/log-capture.ts';
import { NATS_CA, NATS_CREDS, NATS_FILES, NATS_URL } from '../support/env.ts';
import { freePort, stopProcess, waitFor } from '../support/processes.ts';

/**
 * TLS on the broker's client port (scripts/local-nats.ts serves it, docs/operations.md → Security model): a plain-text client is
 * refused by the server itself; services and agents verify the server against the CA they were given, so a broker
 * whose certificate chains to another CA (a man in the middle, a wrong SVC_NATS_CA) is refused by them; agents never
 * fall back to plain text.
 */

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'broker-tls-'));
  dirs.push(d);
  return d;
};
const natsAddress = new URL(NATS_URL.split(',')[0]!);
let otherCa: string;
let issuer: BrokerIssuer;
let plainServer: ChildProcess | undefined;
let plainPort: number;

const listening = (port: number): Promise<boolean> =>
  new Promise<boolean>((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });

beforeAll(async () => {
  // Another CA, made the way the project makes its own: a valid chain, just not the broker's.
  otherCa = ensureBrokerCertificates(tempDir()).ca;
  issuer = await BrokerIssuer.fromFiles(NATS_CREDS, NATS_FILES.issuerKey);
  // A bare broker (no TLS, no authentication) on a private port: what an attacker on the path could offer.
  plainPort = await freePort();
  plainServer = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(plainPort)], { stdio: 'ignore' });
  await waitFor(() => listening(plainPort), 15_000, 'the plain nats-server to listen');
});

afterAll(async () => {
  await stopProcess(plainServer);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** What a plain-text client gets: the server's INFO, then whatever follows a CONNECT and PING sent in clear. */
function plainTextSession(
  host: string,
  port: number,
): Promise<{ info: Record<string, unknown>; after: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port });
    let buffer = '';
    let info: Record<string, unknown> | undefined;
    // A server that answers PONG has accepted the session: no need to wait for a close that will not come.
    const done = (): void => (
      clearTimeout(timer),
      socket.destroy(),
      resolve({ info: info ?? {}, after: buffer, closed: false })
    );
    const timer = setTimeout(done, 10_000);
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      if (!info && buffer.includes('\r\n')) {
        const line = buffer.slice(0, buffer.indexOf('\r\n'));
        info = JSON.parse(line.replace(/^INFO\s+/, '')) as Record<string, unknown>;
        buffer = buffer.slice(line.length + 2);
        socket.write(
          'CONNECT {"verbose":false,"pedantic":false,"tls_required":false,"lang":"raw","version":"0"}\r\nPING\r\n',
        );
      }
      if (buffer.includes('PONG')) done();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      if (!info) reject(new Error('closed before INFO'));
      else if (!buffer.includes('PONG')) resolve({ info, after: buffer, closed: true });
    });
  });
}

async function agentCredentials(): Promise<AgentCredentials> {
  const dir = tempDir();
  const kp = createUser();
  const issued = await issuer.agent(`tls-${Date.now()}`, kp.getPublicKey(), 600);
  await writeCredsFile(dir, fmtCreds(issued.jwt, kp));
  return AgentCredentials.load(dir);
}

describe('the broker', () => {
  it('requires TLS: a plain-text client gets no PONG and is disconnected', async () => {
    const session = await plainTextSession(natsAddress.hostname, Number(natsAddress.port));
    expect(session.info.tls_required).toBe(true);
    expect(session.after).not.toContain('PONG');
    expect(session.closed).toBe(true);
    // The same session with a server that allows plain text is answered: what the refusal above is told apart from.
    expect((await plainTextSession('127.0.0.1', plainPort)).after).toContain('PONG');
  });

  it("presents a certificate of the project's CA for its loopback address", async () => {
    const ca = new X509Certificate(readFileSync(NATS_CA));
    const cert = new X509Certificate(readFileSync(join(NATS_FILES.ca, '..', TLS_FILES.cert)));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
  });
});

describe('a service', () => {
  it('connects when the server chains to SVC_NATS_CA', async () => {
    const nc = await connect({
      servers: NATS_URL.split(','),
      ...brokerAuth(NATS_CREDS),
      ...brokerTls(NATS_CA),
      reconnect: false,
      timeout: 5_000,
    });
    expect(nc.info?.tls_required).toBe(true);
    await nc.close();
  });

  it('refuses a server whose certificate does not chain to SVC_NATS_CA', async () => {
    await expect(
      connect({
        servers: NATS_URL.split(','),
        ...brokerAuth(NATS_CREDS),
        ...brokerTls(otherCa),
        reconnect: false,
        timeout: 5_000,
      }),
    ).rejects.toThrow(/certificate/i);
    // The gateways' background connection keeps refusing it: never up, and it says why.
    const { log, lines } = capturingLogger();
    const nats = new LazyNats(NATS_URL, 'tls-wrong-ca', log, NATS_CREDS, otherCa);
    try {
      await waitFor(
        () => lines.some((l) => l.msg === 'nats not reachable yet; retrying'),
        15_000,
        'the refused connect to be logged',
      );
      expect(JSON.stringify(lines)).toMatch(/certificate/i);
      expect(nats.current).toBeUndefined();
      expect(await nats.healthy()).toBe(false);
    } finally {
      await nats.close();
    }
  });
});

describe('an agent', () => {
  async function linkWith(
    servers: string[],
    ca: string | undefined,
  ): Promise<{ link: AgentLink; lines: { msg: string; err?: unknown }[] }> {
    const { log, lines } = capturingLogger<{ level: number; msg: string; err?: unknown }>();
    const link = new AgentLink({
      servers,
      name: 'agent-tls-test',
      inboxPrefix: '_INBOX.agent-tls',
      credentials: await agentCredentials(),
      ...(ca ? { ca } : {}),
      log,
      retryMinMs: 200,
      retryMaxMs: 400,
      connectTimeoutMs: 5_000,
    });
    return { link, lines };
  }

  it('connects to a broker whose certificate chains to its pinned CA', async () => {
    const { link } = await linkWith(NATS_URL.split(','), readFileSync(NATS_CA, 'utf8'));
    try {
      await waitFor(() => link.isUp, 15_000, 'the agent to connect');
    } finally {
      await link.close();
    }
  });

  it('refuses a broker whose certificate chains to another CA than the pinned one', async () => {
    const { link, lines } = await linkWith(NATS_URL.split(','), readFileSync(otherCa, 'utf8'));
    try {
      await waitFor(
        () => lines.some((l) => l.msg === 'broker not reachable; buffering and retrying'),
        15_000,
        'the refused connect to be logged',
      );
      expect(String(lines.find((l) => l.msg === 'broker not reachable; buffering and retrying')?.err)).toMatch(
        /certificate/i,
      );
      expect(link.isUp).toBe(false);
      expect(link.connects).toBe(0);
    } finally {
      await link.close();
    }
  });

  it('never falls back to plain text: a broker without TLS is refused', async () => {
    const { link, lines } = await linkWith([`nats://127.0.0.1:${plainPort}`], readFileSync(NATS_CA, 'utf8'));
    try {
      await waitFor(
        () => lines.some((l) => l.msg === 'broker not reachable; buffering and retrying'),
        15_000,
        'the refused connect to be logged',
      );
      expect(String(lines.find((l) => l.msg === 'broker not reachable; buffering and retrying')?.err)).toMatch(/tls/i);
      expect(link.connects).toBe(0);
    } finally {
      await link.close();
    }
  });
});
