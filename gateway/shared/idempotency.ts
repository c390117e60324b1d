import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { KvStore } from '../../platform/stores/kv.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { HttpError, statusOf, type ApiError, type ApiErrorCode } from './errors.ts';

/**
 * `Idempotency-Key` on creating POST routes: the first complete answer is kept 24 h per caller and key, and a
 * repeat gets it again instead of running the request a second time (a retry after a 504 must not create twice).
 */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Set on an answer that is a replay of the stored one. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** 1–255 printable ASCII characters (a UUID is the usual choice). */
const KEY = /^[\x20-\x7E]{1,255}$/;

/** A complete answer as stored: a success body, or the error re-sent with the repeat's own request id. */
export type StoredAnswer =
  { status: number; body: unknown } | { status: number; error: { code: ApiErrorCode; message: string } };

type Entry = { state: 'running'; fp: string } | { state: 'done'; fp: string; answer: StoredAnswer };

export type Claim = { kind: 'claimed' } | { kind: 'replay'; answer: StoredAnswer };

/** The request's key, `undefined` without the header; a malformed one is a 400. */
export function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !KEY.test(raw))
    throw new DomainError('bad_request', 'headers.idempotency-key: must be 1 to 255 printable ASCII characters');
  return raw;
}

/** Whose keys these are: a user or a service account. Anonymous callers have no scope (and no idempotency). */
export function callerScope(ctx: CallerContext): string | undefined {
  const p = ctx.principal;
  if (p.kind === 'user') return `user:${p.user_id}`;
  if (p.kind === 'service_account') return `sa:${p.service_account_id}`;
  return undefined;
}

/** What makes two requests "the same": method, URL and body (keys sorted, so field order does not matter). */
export function fingerprint(req: FastifyRequest): string {
  return createHash('sha256')
    .update(`${req.method} ${req.url}\n${stableJson(req.body)}`)
    .digest('hex');
}

function stableJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** An error answer worth keeping: a final 4xx. 408/429 and every 5xx (503, 504 included) may go otherwise next time. */
export function isFinalError(err: ApiError): boolean {
  const status = statusOf[err.code];
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

export class IdempotencyStore {
  private readonly kv: KvStore;
  constructor(kv: KvStore) {
    this.kv = kv;
  }

  private slot(scope: string, key: string): string {
    // Hashed: the key is the client's text and may be long; only equality matters.
    return `idem:${scope}:${createHash('sha256').update(key).digest('hex')}`;
  }

  /**
   * Claims the key for a new request (marked running for `lockMs`, so a gateway that dies mid-request does not lock
   * the key for a day), or answers what is already there: the stored answer, 409 while the first still runs, 422
   * for another request under the same key. Throws 503 when the store is unreachable: without it a repeat could not
   * be recognised, so nothing is run.
   */
  async claim(scope: string, key: string, fp: string, lockMs: number): Promise<Claim> {
    const slot = this.slot(scope, key);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        if (
          await this.kv.set(slot, JSON.stringify({ state: 'running', fp } satisfies Entry), { nx: true, ttlMs: lockMs })
        )
          return { kind: 'claimed' };
        const raw = await this.kv.get(slot);
        if (raw === null) continue; // expired between the two commands: try to claim again
        const entry = JSON.parse(raw) as Entry;
        if (entry.fp !== fp)
          throw new HttpError('unprocessable_entity', 'this Idempotency-Key was already used with a different request');
        if (entry.state === 'running')
          throw new DomainError(
            'conflict',
            'a request with this Idempotency-Key is still being processed; retry later',
          );
        return { kind: 'replay', answer: entry.answer };
      }
    } catch (err) {
      if (err instanceof DomainError || err instanceof HttpError) throw err;
      throw new DomainError('unavailable', 'the idempotency store is unreachable; retry');
    }
    throw new DomainError('conflict', 'a request with this Idempotency-Key is still being processed; retry later');
  }

  /** Keeps the complete answer for 24 h. */
  async save(scope: string, key: string, fp: string, answer: StoredAnswer): Promise<void> {
    await this.kv.set(this.slot(scope, key), JSON.stringify({ state: 'done', fp, answer } satisfies Entry), {
      ttlMs: IDEMPOTENCY_TTL_MS,
    });
  }

  /** Frees the key after an answer that is not kept (5xx, 504), so the client can retry it. */
  async release(scope: string, key: string): Promise<void> {
    await this.kv.del(this.slot(scope, key));
  }
}
