import { z } from 'zod';
import { Access } from '../context.ts';
import { subjects } from '../subject.ts';

/** Who a verified access token belongs to now, with the per-client permissions: what the gateway hands to actors. */
export const ResolvedUser = z.object({
  user_id: z.uuid(),
  email: z.string(),
  status: z.enum(['invited', 'active', 'disabled']),
  is_super_admin: z.boolean(),
  mfa_enabled: z.boolean(),
  access: Access,
});
export type ResolvedUser = z.infer<typeof ResolvedUser>;

export const ResolvedServiceAccount = z.object({
  service_account_id: z.uuid(),
  name: z.string(),
  access: Access,
});
export type ResolvedServiceAccount = z.infer<typeof ResolvedServiceAccount>;

export const accessSubjects = subjects({
  'svc.identity.access.resolve': {
    retry: 'safe',
    summary: 'Resolves a user into status and per-client permissions (cached 15 minutes, invalidated on every change).',
    request: z.object({ user_id: z.uuid() }),
    reply: ResolvedUser,
    errors: ['unauthorized'],
  },
  'svc.identity.access.resolve_key': {
    retry: 'safe',
    summary: 'Authenticates a service-account API key and resolves its permissions.',
    request: z.object({ api_key: z.string().min(1).max(256) }),
    reply: ResolvedServiceAccount,
    errors: ['unauthorized'],
  },
  'svc.identity.access.client_removed': {
    summary:
      "A client is being deleted (called by the fleet domain before it deletes the row): drops the client's team links and direct role assignments and the affected users' cached access (clients:delete on the client).",
    request: z.object({ client_id: z.uuid() }),
    reply: z.object({ affected_users: z.number().int().nonnegative() }),
    errors: ['forbidden'],
  },
});
