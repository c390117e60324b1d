import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { requireSecrets, type Config } from './config.ts';

/** NATS headers of a signed request. */
export const SignatureHeaders = {
  signedAt: 'Svc-Signed-At',
  signature: 'Svc-Signature',
} as const;

export type VerifyResult =
  | { ok: true }
  | { ok: false; reason: 'unsigned' | 'malformed' | 'unknown key' | 'bad signature' | 'stale' | 'from the future' };

interface Key {
  id: string;
  secret: KeyObject;
}

/**
 * The HMAC key as a KeyObject made once: given raw bytes, Node 24's createHmac wraps them in a new key object on every
 * call, which was the whole of the runtime's extra cost per request on Node 24 (docs/benchmarks.md → Node 20 against
 * Node 24).
 */
const keyOf = (secret: string): Key => ({
  id: createHash('sha256').update(secret).digest('hex').slice(0, 8),
  secret: createSecretKey(Buffer.from(secret, 'utf8')),
});

const SIGNATURE = /^v1=([0-9a-f]{8}):([A-Za-z0-9_-]{43})$/;

/**
 * Signs and verifies request envelopes between services. Whoever builds a caller context (a gateway after
 * authentication, an actor making a nested call) signs the wire subject, the request id, the deadline, the time of
 * signing and the whole payload (context and input) with HMAC-SHA256 under a key only the services hold; an actor
 * verifies before it parses anything. A NATS connection alone therefore never makes a caller, and a captured message
 * cannot be replayed after `maxAgeMs` nor moved to another subject. Several keys may verify (rotation: sign with the
 * new one, keep the previous one verifying until every process has the new key).
 */
export class ContextSigner {
  private readonly current: Key;
  private readonly verifiers: Map<string, Key>;
  /**
   * What this signer signed lately, by signature. A request served by the process that sent it (`npm start`'s shape,
   * or an actor's nested call to its own domain) is then verified by comparing it with what was signed, bytes and
   * all: equal, its MAC is the one computed at signing, so computing it again (half of what an HMAC sign and
   * verify cost per request) would prove nothing more. The replay window still applies; a request verified once
   * leaves the map, so a repeat of it (the caller's retry, a replay) is verified the full way.
   */
  private readonly signed = new Map<
    string,
    { subject: string; requestId: string; deadline: string; signedAt: string; at: number; payload: Uint8Array }
  >();
  /** Payload bytes the entries above hold. */
  private signedBytes = 0;
  private sweptAt = 0;
  /**
   * Wire subjects an ActorHost of this process serves with this signer (`servesHere`): only requests on these can
   * come back here, so only they are kept. A gateway process with no actors keeps nothing, and pays nothing.
   */
  private readonly servedHere = new Set<string>();

  readonly maxAgeMs: number;
  private readonly now: () => number;
  constructor(secret: string, previous: readonly string[] = [], maxAgeMs = 30_000, now: () => number = Date.now) {
    this.maxAgeMs = maxAgeMs;
    this.now = now;
    if (secret.length < 32) throw new Error('the context signing key must be at least 32 characters');
    this.current = keyOf(secret);
    this.verifiers = new Map([this.current, ...previous.filter(Boolean).map(keyOf)].map((k) => [k.id, k]));
  }

  private mac(
    key: Key,
    subject: string,
    requestId: string,
    deadline: string,
    signedAt: string,
    payload: Uint8Array,
  ): Buffer {
    return createHmac('sha256', key.secret)
      .update(`${subject}\n${requestId}\n${deadline}\n${signedAt}\n`)
      .update(payload)
      .digest();
  }

  /** The two header values to send with `payload` on `subject`. */
  sign(
    subject: string,
    requestId: string,
    deadline: number,
    payload: Uint8Array,
  ): { signedAt: string; signature: string } {
    const signedAt = String(this.now());
    const mac = this.mac(this.current, subject, requestId, String(deadline), signedAt, payload);
    const signature = `v1=${this.current.id}:${mac.toString('base64url')}`;
    if (this.servedHere.has(subject))
      this.remember(signature, {
        subject,
        requestId,
        deadline: String(deadline),
        signedAt,
        at: Number(signedAt),
        payload,
      });
    return { signedAt, signature };
  }

  /** An actor of this process verifies requests on `wireSubject` with this signer: what it signs there is kept. */
  servesHere(wireSubject: string): void {
    this.servedHere.add(wireSubject);
  }

  /**
   * Keeps what was just signed for `verify`: small payloads only (a request envelope is ~0.5 KB; a 1 MB upload is not
   * worth holding), copied into memory of their own (the caller's buffer is its to reuse, and a copy from Node's
   * pool would pin an 8 KB block), the latest SIGNED_KEPT of them, SIGNED_BYTES at most, none older than the replay
   * window. Most of what a gateway signs is served by other processes and never comes back here.
   */
  private remember(
    signature: string,
    entry: { subject: string; requestId: string; deadline: string; signedAt: string; at: number; payload: Uint8Array },
  ): void {
    if (entry.payload.length > SIGNED_PAYLOAD_MAX) return;
    const copy = new Uint8Array(entry.payload);
    this.signed.set(signature, { ...entry, payload: copy });
    this.signedBytes += copy.length;
    // Entries past the window are swept once a second, not on every signature: the walk from the oldest is the cost.
    const now = this.now();
    const sweep = now - this.sweptAt >= 1000;
    if (!sweep && this.signed.size <= SIGNED_KEPT && this.signedBytes <= SIGNED_BYTES) return;
    if (sweep) this.sweptAt = now;
    const oldest = now - this.maxAgeMs;
    for (const [key, kept] of this.signed) {
      if (this.signed.size <= SIGNED_KEPT && this.signedBytes <= SIGNED_BYTES && kept.at >= oldest) break;
      this.forget(key, kept.payload);
    }
  }

  private forget(signature: string, payload: Uint8Array): void {
    this.signed.delete(signature);
    this.signedBytes -= payload.length;
  }

  verify(
    subject: string,
    requestId: string,
    deadline: string,
    signedAt: string | undefined,
    signature: string | undefined,
    payload: Uint8Array,
  ): VerifyResult {
    if (!signature || !signedAt) return { ok: false, reason: 'unsigned' };
    const m = SIGNATURE.exec(signature);
    const at = Number(signedAt);
    if (!m || !/^\d{1,16}$/.test(signedAt) || !Number.isSafeInteger(at)) return { ok: false, reason: 'malformed' };
    const key = this.verifiers.get(m[1]!);
    if (!key) return { ok: false, reason: 'unknown key' };
    // Looked up once: a match or not, the entry goes, so a repeat, a replay or a near-copy is verified the full way.
    const mine = this.signed.get(signature);
    if (mine !== undefined) this.forget(signature, mine.payload);
    if (
      mine === undefined ||
      mine.subject !== subject ||
      mine.requestId !== requestId ||
      mine.deadline !== deadline ||
      mine.signedAt !== signedAt ||
      !sameBytes(mine.payload, payload)
    ) {
      const expected = this.mac(key, subject, requestId, deadline, signedAt, payload);
      const given = Buffer.from(m[2]!, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return { ok: false, reason: 'bad signature' };
    }
    // Checked after the MAC, so a forger learns nothing about the window; a little skew ahead is allowed for clocks.
    const age = this.now() - at;
    if (age > this.maxAgeMs) return { ok: false, reason: 'stale' };
    if (age < -5_000) return { ok: false, reason: 'from the future' };
    return { ok: true };
  }
}

/** What ContextSigner keeps to recognise its own requests: a few seconds of one process's calls at full load. */
const SIGNED_KEPT = 4096;
const SIGNED_BYTES = 4 * 1024 * 1024;
const SIGNED_PAYLOAD_MAX = 16 * 1024;

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);

/** The signer of a process's requests and verifier of those it serves, from SVC_CONTEXT_KEY (and its predecessors). */
export const contextSigner = (config: Config): ContextSigner =>
  new ContextSigner(
    requireSecrets(config, ['SVC_CONTEXT_KEY']).SVC_CONTEXT_KEY,
    config.SVC_CONTEXT_KEY_PREVIOUS,
    config.SVC_CONTEXT_MAX_AGE_SECONDS * 1000,
  );
