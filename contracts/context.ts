import { z } from 'zod';

/** Permissions granted per client uuid. */
export const ClientAccessMap = z.record(z.string(), z.array(z.string()));
export type ClientAccessMap = z.infer<typeof ClientAccessMap>;

export const Principal = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('anonymous') }),
  z.object({
    kind: z.literal('user'),
    user_id: z.uuid(),
    session_id: z.uuid(),
    email: z.string(),
    is_super_admin: z.boolean(),
    mfa_enabled: z.boolean(),
  }),
  z.object({
    kind: z.literal('service_account'),
    service_account_id: z.uuid(),
    name: z.string(),
  }),
]);
export type Principal = z.infer<typeof Principal>;

/** Permissions granted on single environments: environment uuid → its client and the permissions. */
export const EnvironmentAccessMap = z.record(
  z.string(),
  z.object({ client_id: z.string(), permissions: z.array(z.string()) }),
);
export type EnvironmentAccessMap = z.infer<typeof EnvironmentAccessMap>;

/**
 * What a caller may do. `all_clients` holds permissions granted on every client (a service account scoped `["*"]`);
 * `clients` the per-client grants. Super admins pass every check. `environments` holds grants narrower than a client
 * (notes and chart markers are "environment-aware": docs/api/events.md#environment-scoped-grants); identity issues none
 * yet, and only the environment-aware checks (platform/scope.ts) read it: a client-wide check never passes on it.
 */
export const Access = z.object({
  super_admin: z.boolean(),
  all_clients: z.array(z.string()),
  clients: ClientAccessMap,
  environments: EnvironmentAccessMap.optional(),
});
export type Access = z.infer<typeof Access>;

/** The caller context sent with every request over NATS: `{ ctx, input }`. */
export const CallerContext = z.object({
  request_id: z.string(),
  ip: z.string().optional(),
  user_agent: z.string().optional(),
  principal: Principal,
  access: Access.optional(),
});
export type CallerContext = z.infer<typeof CallerContext>;

export const anonymousContext = (
  request_id: string,
  extra: { ip?: string; user_agent?: string } = {},
): CallerContext => ({
  request_id,
  ...extra,
  principal: { kind: 'anonymous' },
});
