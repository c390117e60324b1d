import { useQuery } from '@tanstack/react-query';
import { api, ApiError, unwrap } from '../api/client.ts';
import { ErrorNotice } from '../ui/ErrorNotice.tsx';

/** The first page after sign-in: the clients the caller may see. */
export function Overview() {
  const clients = useQuery({
    queryKey: ['clients', 1],
    queryFn: () => unwrap(api.GET('/api/v1/clients', { params: { query: { per_page: 100, sort: 'name' } } })),
  });
  const forbidden = clients.error instanceof ApiError && clients.error.status === 403;
  return (
    <>
      <h1>Overview</h1>
      <h2>Clients</h2>
      {clients.isPending && <p aria-live="polite">Loading clients…</p>}
      {forbidden ? <p>Your role does not include reading clients.</p> : <ErrorNotice error={clients.error} />}
      {clients.data && clients.data.data.length === 0 && <p>No clients yet.</p>}
      {clients.data && clients.data.data.length > 0 && (
        <ul className="list" aria-label="Clients">
          {clients.data.data.map((c) => (
            <li key={c.id}>
              <strong>{c.name}</strong> <span className="muted">{c.slug}</span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
