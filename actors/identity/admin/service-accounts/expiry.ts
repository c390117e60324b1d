import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';

export function futureOrThrow(deps: IdentityDeps, expiresAt: string | null | undefined): Date | null {
  if (expiresAt === undefined || expiresAt === null) return null;
  const at = new Date(expiresAt);
  if (at.getTime() <= deps.clock.now()) throw new DomainError('bad_request', 'body.expires_at: must be in the future');
  return at;
}
