import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

/** The signed-in user and their client access map (GET /auth/me), shared by every page. */
export function useMe() {
  return useQuery({ queryKey: ['me'], queryFn: () => unwrap(api.GET('/api/v1/auth/me')), staleTime: 60_000 });
}

type Me = NonNullable<ReturnType<typeof useMe>['data']>['data'];

/**
 * Whether the user holds `permission`, on `clientId` or on any client: what a page checks before it offers an action
 * (the API checks again; this only hides what would be refused).
 */
export function can(me: Me | undefined, permission: string, clientId?: string): boolean {
  if (!me) return false;
  if (me.user.is_super_admin) return true;
  const lists = clientId ? [me.client_access[clientId] ?? []] : Object.values(me.client_access);
  return lists.some((perms) => perms.includes(permission) || perms.includes('*'));
}
