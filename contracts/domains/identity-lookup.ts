import { z } from 'zod';
import { subjects } from '../subject.ts';

/**
 * Service-to-service lookup of users' display names, for domains that show who wrote something (chart notes'
 * `created_by_name`). No REST route reaches it; only a service's signed request does.
 */
export const UserName = z.object({ id: z.uuid(), display_name: z.string(), email: z.string() });
export type UserName = z.infer<typeof UserName>;

export const identityLookupSubjects = subjects({
  'svc.identity.lookup.user_names': {
    retry: 'safe',
    summary: 'Display names and e-mails of users by id (those that exist).',
    request: z.object({ user_ids: z.array(z.uuid()).min(1).max(200) }),
    reply: z.object({ users: z.array(UserName) }),
    errors: [],
  },
});
