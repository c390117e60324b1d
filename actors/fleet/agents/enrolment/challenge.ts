import { fromPublic } from '@nats-io/nkeys';

/** How long a challenge may be answered: the agent signs it at once, so minutes are plenty. */
export const CHALLENGE_TTL_MS = 5 * 60_000;

function decodeBase64Url(value: string): Buffer | undefined {
  const buf = Buffer.from(value, 'base64url');
  // Buffer.from ignores what it cannot decode: a round trip tells a real encoding from garbage.
  return buf.length > 0 && buf.toString('base64url') === value.replace(/=+$/, '') ? buf : undefined;
}

/** True when `signature` is the Ed25519 signature of `challenge` by the nkey `publicKey`. */
export function verifiesChallenge(publicKey: string, challenge: string, signature: string): boolean {
  const sig = decodeBase64Url(signature);
  if (!sig || sig.length !== 64) return false;
  try {
    return fromPublic(publicKey).verify(new TextEncoder().encode(challenge), sig);
  } catch {
    return false;
  }
}
