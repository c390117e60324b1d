import { z } from 'zod';
import { DomainError } from './errors.ts';

/**
 * Fields fixed at creation, on every PUT (Kubernetes' convention): a field sent with the value it already has is
 * accepted, so a GET → edit → PUT round trip works; a different value is 400 naming the field; leaving it out is fine.
 * The gateway cannot tell the two apart (it does not know the stored value), so the fields travel to the owning actor,
 * which compares them with what its GET shows, after its permission checks.
 */

/**
 * The immutable `fields` of `resource` (the reply schema its GET answers with), each optional: the shape an update body
 * adds so a client may echo them. Typed as the GET shows them, so an echo always parses.
 */
export function immutableFields<S extends z.ZodRawShape, K extends keyof S & string>(
  resource: z.ZodObject<S>,
  fields: readonly K[],
): { [P in K]: z.ZodOptional<S[P]> } {
  return Object.fromEntries(fields.map((f) => [f, z.optional(resource.shape[f] as S[K])])) as {
    [P in K]: z.ZodOptional<S[P]>;
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `sent` is the value `current` shows: a UUID in another letter case is the same id (RFC 9562 §4). */
export function sameValue(sent: unknown, current: unknown): boolean {
  if (sent === current) return true;
  return (
    typeof sent === 'string' &&
    typeof current === 'string' &&
    UUID.test(sent) &&
    UUID.test(current) &&
    sent.toLowerCase() === current.toLowerCase()
  );
}

/** 400 `body.slug: cannot be changed (it is "acme")` for the first field of `fields` sent with a value `current` does not have. */
export function refuseChanges<T extends object, K extends keyof T & string>(
  sent: { readonly [P in K]?: unknown },
  current: T,
  fields: readonly K[],
): void {
  for (const field of fields) {
    const value = sent[field];
    if (value === undefined || sameValue(value, current[field])) continue;
    throw new DomainError(
      'bad_request',
      `body.${field}: cannot be changed (it is ${JSON.stringify(current[field])}); send it unchanged or leave it out`,
      { field },
    );
  }
}
