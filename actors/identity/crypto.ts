import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { DomainError } from '../../contracts/errors.ts';

/** 32 random bytes, base64url: refresh, reset and invitation tokens. */
export const randomToken = (): string => randomBytes(32).toString('base64url');

/** Tokens are high-entropy, so a fast hash is enough to store them (nothing to brute-force). */
export const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');

export const safeEqual = (a: string, b: string): boolean => {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
};

export interface AccessClaims {
  sub: string;
  sid: string;
  email: string;
}

/** How many verified tokens are remembered (oldest dropped first): about 3 MB at most. */
const VERIFIED_KEPT = 10_000;
/** An HS256 signature (32 bytes) as base64url writes it: 43 characters, the last one's two unused bits zero. */
const CANONICAL_HS256 = /\.[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** HS256 access tokens. */
export class AccessTokens {
  /**
   * Tokens whose signature and claims were verified, with their expiry (s). jose verifies through WebCrypto, which
   * runs on libuv's thread pool: two thread hand-offs per request, most of an authenticated request's latency on a
   * VM that wakes threads slowly. A client sends the same token for its whole life, so once verified, it is looked
   * up by its exact text (a changed signature or claim is another key, verified afresh); its expiry is still checked
   * on every use. Refused tokens are never kept.
   */
  private readonly verified = new Map<string, { claims: AccessClaims; exp: number }>();
  /**
   * Imported once: given raw bytes, jose imports the HMAC key again on every sign and verify, a visible share of an
   * authenticated request's CPU.
   */
  private readonly key: Promise<CryptoKey>;
  readonly ttlSeconds: number;
  private readonly now: () => number;
  private readonly maxKept: number;
  constructor(secret: string, ttlSeconds: number, now: () => number = Date.now, maxKept = VERIFIED_KEPT) {
    this.ttlSeconds = ttlSeconds;
    this.now = now;
    this.maxKept = maxKept;
    this.key = globalThis.crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(secret),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign', 'verify'],
    );
  }

  /** How many verified tokens are kept now. */
  get kept(): number {
    return this.verified.size;
  }

  async sign(claims: AccessClaims): Promise<string> {
    const iat = Math.floor(this.now() / 1000);
    return new SignJWT({ sid: claims.sid, email: claims.email, typ: 'access' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.ttlSeconds)
      .setJti(randomBytes(12).toString('base64url'))
      .sign(await this.key);
  }

  async verify(token: string): Promise<AccessClaims> {
    const kept = this.verified.get(token);
    if (kept) {
      // jose's rule: expired once exp <= now in whole seconds.
      if (kept.exp > Math.floor(this.now() / 1000)) return kept.claims;
      this.verified.delete(token);
      throw new DomainError('unauthorized', 'token expired');
    }
    try {
      const { payload } = await jwtVerify(token, await this.key, {
        algorithms: ['HS256'],
        currentDate: new Date(this.now()),
        // A token without an expiry would be valid forever: refused even when correctly signed.
        requiredClaims: ['exp', 'iat', 'sub'],
      });
      if (
        payload.typ !== 'access' ||
        typeof payload.sub !== 'string' ||
        typeof payload.sid !== 'string' ||
        typeof payload.email !== 'string'
      )
        throw new DomainError('unauthorized', 'invalid token');
      const claims = { sub: payload.sub, sid: payload.sid, email: payload.email };
      // Only the canonical spelling of a signature is kept: base64 decoding ignores a last character's unused bits (and
      // a trailing `=`), so one token verifies under several spellings, each of which would take an entry.
      if (CANONICAL_HS256.test(token)) {
        if (this.verified.size >= this.maxKept) this.verified.delete(this.verified.keys().next().value!);
        // requiredClaims made exp present; jose checked it is a number.
        this.verified.set(token, { claims, exp: payload.exp! });
      }
      return claims;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw new DomainError('unauthorized', 'token expired');
      if (err instanceof DomainError) throw err;
      throw new DomainError('unauthorized', 'invalid token');
    }
  }
}

/** Moved to the runtime (the events domain seals webhook secrets with it too); kept importable from here. */
export { SecretBox } from '../../platform/secret-box.ts';
