import { DomainError } from '../../../contracts/errors.ts';
import type { Logger } from '../../../platform/logger.ts';
import { sleep, type TokenBucket } from './bucket.ts';

// Control characters of a tracker's message, shown as spaces (a log or an answer must not carry them).
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f]+/g;

export interface TrackerSettings {
  baseUrl: string;
  email: string;
  apiToken: string;
  /** One attempt gives up after this long. */
  timeoutMs: number;
}

export interface TrackerCall {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** `/rest/servicedeskapi/...` or `/rest/api/3/...` */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  /** A raw body (a streamed multipart upload); never repeated. */
  raw?: { body: ReadableStream<Uint8Array>; contentType: string };
  headers?: Record<string, string>;
  /** A read: repeated with backoff after a network failure, a timeout or a 502/503/504. */
  idempotent?: boolean;
  /** `wait`: background work sleeps out a 429 and tries again; `throw` (default): the caller gets the 429. */
  on429?: 'throw' | 'wait';
  /** What a 404 means here, for the error message ("request SUP-1"). */
  what?: string;
  /** Epoch ms: nothing is started after it, waits never pass it. */
  deadline?: number;
  signal?: AbortSignal;
}

export interface TrackerResponse {
  status: number;
  body: unknown;
}

const ATTEMPTS = 3;
const BACKOFF_MS = [250, 1_000];
const MAX_429_WAITS = 5;
const MAX_RETRY_AFTER_MS = 60_000;
/** A background call (no caller deadline) waits at most this long for a token. */
const BACKGROUND_WAIT_MS = 120_000;

/** Failed before an answer: unreachable, reset, timed out. */
class TransportError extends Error {
  readonly timedOut: boolean;
  constructor(message: string, timedOut: boolean) {
    super(message);
    this.timedOut = timedOut;
  }
}

/**
 * The one way out to the issue tracker (a Jira Service Management cloud site): basic authentication with the account's
 * e-mail and API token, every attempt through the shared token bucket, a timeout per attempt, reads repeated with
 * backoff. Its failures become domain errors with our own messages, never the tracker's body: 404 when the tracker
 * says the thing does not exist, 429 (with Retry-After) when it rate-limits, 502 for anything else (a refusal of the
 * input with its message, trimmed: the failure is between us and the tracker, not in the caller's request to us).
 */
export class TrackerClient {
  private readonly auth: string;
  private readonly base: string;

  private readonly settings: TrackerSettings;
  private readonly bucket: TokenBucket;
  private readonly log: Logger;
  constructor(settings: TrackerSettings, bucket: TokenBucket, log: Logger) {
    this.settings = settings;
    this.bucket = bucket;
    this.log = log;
    this.auth = `Basic ${Buffer.from(`${settings.email}:${settings.apiToken}`).toString('base64')}`;
    this.base = settings.baseUrl.replace(/\/+$/, '');
  }

  async call(c: TrackerCall): Promise<TrackerResponse> {
    const attempts = c.idempotent && !c.raw ? ATTEMPTS : 1;
    let waits429 = 0;
    for (let attempt = 0; ;) {
      const remaining = c.deadline !== undefined ? c.deadline - Date.now() : undefined;
      if (remaining !== undefined && remaining <= 0)
        throw new DomainError('timeout', 'the request ran out of time waiting for the issue tracker');
      // Keep a little of the caller's time for the answer itself.
      await this.bucket.take(remaining !== undefined ? Math.max(0, remaining - 500) : BACKGROUND_WAIT_MS, c.signal);
      let res: Response;
      try {
        res = await this.once(c);
      } catch (err) {
        if (c.signal?.aborted)
          throw c.signal.reason instanceof Error ? c.signal.reason : new DomainError('timeout', 'deadline passed');
        const transport =
          err instanceof TransportError
            ? err
            : new TransportError(err instanceof Error ? err.message : String(err), false);
        attempt += 1;
        if (attempt < attempts && (await this.backoff(attempt, c))) continue;
        this.log.warn({ err: transport.message, path: c.path, method: c.method }, 'issue tracker call failed');
        throw new DomainError(
          'bad_gateway',
          transport.timedOut ? 'the issue tracker did not answer in time' : 'the issue tracker could not be reached',
        );
      }
      if (res.status === 429) {
        const retryAfterMs = retryAfterOf(res.headers.get('retry-after'));
        await res.body?.cancel().catch(() => undefined);
        if (c.on429 === 'wait' && waits429 < MAX_429_WAITS && !c.raw) {
          waits429 += 1;
          const waitMs = Math.min(retryAfterMs ?? 1_000 * 2 ** waits429, MAX_RETRY_AFTER_MS);
          if (c.deadline === undefined || Date.now() + waitMs < c.deadline) {
            this.log.info({ wait_ms: waitMs, path: c.path }, 'issue tracker rate-limits us; waiting');
            await sleep(waitMs, c.signal);
            continue;
          }
        }
        throw new DomainError('too_many_requests', 'the issue tracker is rate-limiting requests; retry later', {
          retry_after_seconds: Math.max(1, Math.ceil((retryAfterMs ?? 1_000) / 1000)),
        });
      }
      if ((res.status === 502 || res.status === 503 || res.status === 504) && attempt + 1 < attempts) {
        await res.body?.cancel().catch(() => undefined);
        attempt += 1;
        if (await this.backoff(attempt, c)) continue;
        throw this.failure(res.status, null, c);
      }
      const body = await readBody(res);
      if (res.status >= 200 && res.status < 300) return { status: res.status, body };
      throw this.failure(res.status, body, c);
    }
  }

  /** Sleeps before the next attempt; false when the deadline leaves no room for it. */
  private async backoff(attempt: number, c: TrackerCall): Promise<boolean> {
    const base = BACKOFF_MS[Math.min(attempt - 1, BACKOFF_MS.length - 1)] ?? 1_000;
    const ms = Math.round(base / 2 + Math.random() * base);
    if (c.deadline !== undefined && Date.now() + ms + 200 >= c.deadline) return false;
    await sleep(ms, c.signal);
    return true;
  }

  private async once(c: TrackerCall): Promise<Response> {
    const url = new URL(this.base + c.path);
    for (const [k, v] of Object.entries(c.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { authorization: this.auth, accept: 'application/json', ...c.headers };
    let body: BodyInit | undefined;
    if (c.raw) {
      headers['content-type'] = c.raw.contentType;
      body = c.raw.body;
    } else if (c.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(c.json);
    }
    const timeout = AbortSignal.timeout(
      c.deadline !== undefined
        ? Math.max(1, Math.min(this.settings.timeoutMs, c.deadline - Date.now()))
        : this.settings.timeoutMs,
    );
    const signal = c.signal ? AbortSignal.any([c.signal, timeout]) : timeout;
    try {
      // A streamed body needs half-duplex (undici); JSON bodies are strings.
      return await fetch(url, {
        method: c.method,
        headers,
        body,
        signal,
        ...(c.raw ? { duplex: 'half' } : {}),
        redirect: 'error',
      } as RequestInit);
    } catch (err) {
      if (timeout.aborted) throw new TransportError(`timed out after ${this.settings.timeoutMs} ms`, true);
      throw err;
    }
  }

  private failure(status: number, body: unknown, c: TrackerCall): DomainError {
    const said = trackerMessage(body);
    if (status === 404)
      return new DomainError('not_found', `${c.what ?? 'the requested item'} does not exist in the issue tracker`);
    this.log.warn(
      { status, path: c.path, method: c.method, tracker_message: said },
      'issue tracker answered with an error',
    );
    if (status === 401 || status === 403)
      return new DomainError(
        'bad_gateway',
        `the issue tracker refused the service's credentials or permissions (${status}); check SVC_SD_EMAIL and SVC_SD_API_TOKEN`,
      );
    // A refusal (4xx) names what it refused; a server error's words are its internals, kept to the log.
    if (status >= 400 && status < 500)
      return new DomainError(
        'bad_gateway',
        said
          ? `the issue tracker refused the request (${status}): ${said}`
          : `the issue tracker refused the request (${status})`,
      );
    return new DomainError('bad_gateway', `the issue tracker answered ${status}`);
  }
}

async function readBody(res: Response): Promise<unknown> {
  if (res.status === 204) return null;
  const text = await res.text();
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    if (res.ok) throw new DomainError('bad_gateway', 'the issue tracker answered something that is not JSON');
    return null;
  }
}

/** Retry-After in seconds or as an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterOf(header: string | null): number | undefined {
  if (!header) return undefined;
  const s = Number(header);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The tracker's own words from an error body (servicedeskapi `errorMessage`, platform `errorMessages`/`errors`), trimmed. */
export function trackerMessage(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const b = body as { errorMessage?: unknown; errorMessages?: unknown; errors?: unknown };
  const parts: string[] = [];
  if (typeof b.errorMessage === 'string') parts.push(b.errorMessage);
  if (Array.isArray(b.errorMessages)) parts.push(...b.errorMessages.filter((m): m is string => typeof m === 'string'));
  if (typeof b.errors === 'object' && b.errors !== null) {
    for (const [field, msg] of Object.entries(b.errors as Record<string, unknown>))
      if (typeof msg === 'string') parts.push(`${field}: ${msg}`);
  }
  return parts.join('; ').replace(CONTROL_CHARS, ' ').trim().slice(0, 300);
}
