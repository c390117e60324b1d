import { DomainError } from '../../../../contracts/errors.ts';
import { ALL_PERMISSIONS, isKnownPermission } from '../../permissions.ts';

/** Deduplicated, registry-checked, in registry order; an unknown permission is a 400 naming it. */
export function checkPermissions(permissions: readonly string[]): string[] {
  const unknown = [...new Set(permissions.filter((p) => !isKnownPermission(p)))];
  if (unknown.length > 0)
    throw new DomainError(
      'bad_request',
      `body.permissions: unknown permission${unknown.length > 1 ? 's' : ''} ${unknown.slice(0, 10).join(', ')}`,
    );
  const wanted = new Set(permissions);
  return ALL_PERMISSIONS.filter((p) => wanted.has(p));
}
