import { useInfiniteQuery } from '@tanstack/react-query';
import { api, ApiError, unwrap } from '../../api/client.ts';
import { useMe } from '../../auth/permissions.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { SelectField } from '../../ui/SelectField.tsx';
import { MAX_PER_PAGE } from './queries.ts';
import { ShowMore } from '../../ui/ShowMore.tsx';

/** The clients the user can see, by name, paged in on request as the overview pages them. */
export function ClientPicker({ value, onChange }: { value: string | undefined; onChange: (id: string) => void }) {
  const me = useMe().data?.data;
  const clients = useInfiniteQuery({
    queryKey: ['clients', 'picker'],
    initialPageParam: 1,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/clients', { params: { query: { page: pageParam, per_page: MAX_PER_PAGE, sort: 'name' } } }),
      ),
    getNextPageParam: (last) =>
      last.meta.page * last.meta.per_page < last.meta.total ? last.meta.page + 1 : undefined,
  });
  // A role may hold notifications:read without clients:read: the ids of the access map are the clients then.
  const unnamed = clients.error instanceof ApiError && clients.error.status === 403;
  const options = unnamed
    ? Object.keys(me?.client_access ?? {}).map((id) => ({ id, label: id }))
    : (clients.data?.pages.flatMap((p) => p.data) ?? []).map((c) => ({ id: c.id, label: `${c.name} (${c.slug})` }));
  // One from the address that is not loaded yet stays selectable rather than silently dropped.
  if (value && !options.some((o) => o.id === value)) options.unshift({ id: value, label: value });
  return (
    <div className="row picker">
      <SelectField
        label="Client"
        name="client"
        value={value ?? ''}
        onChange={(e) => onChange(e.target.value)}
        hint={unnamed ? 'Your role does not include reading clients: they are shown by id.' : undefined}
      >
        <option value="">Choose a client</option>
        {options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.label}
          </option>
        ))}
      </SelectField>
      <ShowMore query={clients} label="Show more clients" />
      {(clients.isPending || clients.isFetchingNextPage) && <p aria-live="polite">Loading clients…</p>}
      {!unnamed && <ErrorNotice error={clients.error} />}
    </div>
  );
}
