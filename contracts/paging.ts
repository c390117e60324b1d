import { z } from 'zod';

/** Page and page size of every list: page ≥ 1 (default 1), per_page 1..100 (default 20); query strings coerced. */
export const Paging = {
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
};

/**
 * One page of a list, as platform/stores/sql.ts pageOf answers it. The gateway sends it as the list envelope
 * cut from the actor's bytes when the reply has exactly these four keys in this order (Caller.callForwardedPage), so
 * a handler must answer nothing beyond them: an extra key would reach the client. Actors check that in tests and
 * development (SVC_VALIDATE_REPLIES refuses a reply its schema would trim), as for every forwarded answer.
 */
export const Paged = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    total: z.number().int().nonnegative(),
    page: z.number().int().min(1),
    per_page: z.number().int().min(1),
  });
