import { fmtCreds } from '@nats-io/jwt';
import { createUser } from '@nats-io/nkeys';
import { X509Certificate } from 'node:crypto';
import { access } from 'node:fs/promises';
import { arch as nodeArch, hostname as nodeHostname } from 'node:os';
import { z } from 'zod';
import { LabelMap } from '../contracts/domains/agent-telemetry.ts';
import { describeZodError } from '../contracts/errors.ts';
import { AgentStateFile, privateDir, statePaths, writeAgentState, writeBrokerCa, writeCredsFile } from './state.ts';

/**
 * Enrolment over HTTPS (docs/api/fleet.md#agents-enrolment-credentials-revocation): the agent makes its own NATS user
 * key pair (the seed never leaves the host), presents the public key with a one-time install token, signs the challenge
 * it gets back, and receives a user JWT for that key with the broker's addresses and CA. It then writes agent.creds
 * (mode 600), broker-ca.pem and agent.json into its state directory (mode 700), agent.json last: its presence means
 * "enrolled".
 */

export interface EnrollOptions {
  /** Console base URL, e.g. `http://127.0.0.1:8080`. */
  server: string;
  /** One-time install token. */
  token: string;
  stateDir: string;
  /** Saved in agent.json and sent with every inventory snapshot. */
  labels?: Record<string, string>;
  hostname?: string;
  os?: string;
  arch?: string;
  timeoutMs?: number;
}

export interface EnrollResult {
  agent_id: string;
  host_id: string;
  state_dir: string;
  nats_servers: string[];
  /** Whether the broker's CA came with the reply and is pinned. */
  nats_ca_pinned: boolean;
}

/** Enrolment failed: `message` is what the server said (or what went wrong before it could). */
export class EnrollError extends Error {
  readonly code?: string;
  readonly requestId?: string;
  readonly status?: number;
  constructor(message: string, code?: string, requestId?: string, status?: number) {
    super(message);
    this.code = code;
    this.requestId = requestId;
    this.status = status;
    this.name = 'EnrollError';
  }
}

const StartReply = z.object({ data: z.object({ agent_id: z.string().min(1), challenge: z.string().min(1) }) });
const CompleteReply = z.object({
  data: z.object({
    agent_id: z.string().min(1),
    host_id: z.string().min(1),
    nats_servers: z.array(z.string().min(1)).min(1),
    user_jwt: z.string().min(1),
    inbox_prefix: z.string().min(1),
    /** The CA the broker's certificate chains to (PEM): the agent trusts no other for the broker. */
    nats_ca: z.string().min(1).optional(),
  }),
});

/** The certificates of a PEM bundle; an EnrollError when it holds none or one that does not parse. */
export function parseCaBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new EnrollError('enrolment reply cannot be used: nats_ca holds no PEM certificate');
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (err) {
      throw new EnrollError(
        `enrolment reply cannot be used: nats_ca holds a certificate that does not parse (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  });
}
const ErrorReply = z.object({
  error: z.object({ code: z.string(), message: z.string(), request_id: z.string().optional() }),
});

const UNAME_ARCH: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64', ia32: 'i686', arm: 'armv7l' };

export function baseUrl(server: string): URL {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new EnrollError(`--server must be a URL like http://127.0.0.1:8080 (got ${JSON.stringify(server)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new EnrollError('--server must be an http:// or https:// URL');
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

async function post<T>(base: URL, path: string, body: unknown, schema: z.ZodType<T>, timeoutMs: number): Promise<T> {
  const url = new URL(path, base);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const reason = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    throw new EnrollError(`cannot reach ${url.origin}: ${reason}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const err = ErrorReply.safeParse(json);
    if (err.success)
      throw new EnrollError(err.data.error.message, err.data.error.code, err.data.error.request_id, res.status);
    throw new EnrollError(`${url.pathname} answered HTTP ${res.status}`, undefined, undefined, res.status);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new EnrollError(
      `${url.pathname} answered an unexpected body: ${describeZodError(parsed.error)}`,
      undefined,
      undefined,
      res.status,
    );
  return parsed.data;
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

export async function enrollAgent(opts: EnrollOptions): Promise<EnrollResult> {
  const base = baseUrl(opts.server);
  if (!opts.token.trim()) throw new EnrollError('an install token is required (--token)');
  const labels = LabelMap.safeParse(opts.labels ?? {});
  if (!labels.success) throw new EnrollError(`invalid labels: ${describeZodError(labels.error)}`);
  const paths = statePaths(opts.stateDir);
  if (await exists(paths.agent))
    throw new EnrollError(
      `${opts.stateDir} already holds an enrolled agent (agent.json); use another --state-dir, or remove it to enrol again`,
    );
  const timeoutMs = opts.timeoutMs ?? 15_000;

  const kp = createUser();
  const started = await post(
    base,
    'api/v1/agents/enroll',
    {
      install_token: opts.token.trim(),
      public_key: kp.getPublicKey(),
      hostname: opts.hostname ?? nodeHostname(),
      os: opts.os ?? process.platform,
      arch: opts.arch ?? UNAME_ARCH[nodeArch()] ?? nodeArch(),
    },
    StartReply,
    timeoutMs,
  );
  const { agent_id, challenge } = started.data;
  const signature = Buffer.from(kp.sign(new TextEncoder().encode(challenge))).toString('base64url');
  const done = (
    await post(base, 'api/v1/agents/enroll/complete', { agent_id, challenge, signature }, CompleteReply, timeoutMs)
  ).data;
  if (done.agent_id !== agent_id)
    throw new EnrollError(`enrolment completed for another agent (${done.agent_id}, expected ${agent_id})`);

  // Checked before anything is written, so a reply the agent could not run with leaves no half-enrolled directory.
  const state = AgentStateFile.safeParse({
    agent_id: done.agent_id,
    host_id: done.host_id,
    nats_servers: done.nats_servers,
    inbox_prefix: done.inbox_prefix,
    enrolled_at: new Date().toISOString(),
    labels: labels.data,
  });
  if (!state.success) throw new EnrollError(`enrolment reply cannot be used: ${describeZodError(state.error)}`);
  if (done.nats_ca !== undefined) parseCaBundle(done.nats_ca);
  await privateDir(opts.stateDir);
  await writeCredsFile(opts.stateDir, fmtCreds(done.user_jwt, kp));
  if (done.nats_ca !== undefined) await writeBrokerCa(opts.stateDir, done.nats_ca);
  await writeAgentState(opts.stateDir, state.data);
  return {
    agent_id: done.agent_id,
    host_id: done.host_id,
    state_dir: opts.stateDir,
    nats_servers: done.nats_servers,
    nats_ca_pinned: done.nats_ca !== undefined,
  };
}
