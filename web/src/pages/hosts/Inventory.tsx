import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';

type Row = Record<string, unknown>;
/** A paged list carries `meta`; the short lists (services, ports, …) come whole. */
interface Page {
  data: Row[];
  meta?: { total: number; page: number; per_page: number };
}
const PER_PAGE = 50;

/** Each inventory list of a host, paged as the API pages it. */
const LISTS = {
  processes: (id: string, page: number) =>
    api.GET('/api/v1/hosts/{id}/processes', { params: { path: { id }, query: { page, per_page: PER_PAGE } } }),
  packages: (id: string) => api.GET('/api/v1/hosts/{id}/packages', { params: { path: { id } } }),
  services: (id: string) => api.GET('/api/v1/hosts/{id}/services', { params: { path: { id } } }),
  'cron jobs': (id: string) => api.GET('/api/v1/hosts/{id}/cron-jobs', { params: { path: { id } } }),
  ports: (id: string) => api.GET('/api/v1/hosts/{id}/ports', { params: { path: { id } } }),
  interfaces: (id: string) => api.GET('/api/v1/hosts/{id}/interfaces', { params: { path: { id } } }),
  users: (id: string) => api.GET('/api/v1/hosts/{id}/users', { params: { path: { id } } }),
  integrations: (id: string) => api.GET('/api/v1/hosts/{id}/integrations', { params: { path: { id } } }),
} as const;
type ListName = keyof typeof LISTS;

const cell = (v: unknown): string =>
  v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v);

export function Inventory({ hostId }: { hostId: string }) {
  const [list, setList] = useState<ListName>('processes');
  const [page, setPage] = useState(1);
  const rows = useQuery({
    queryKey: ['inventory', hostId, list, page],
    queryFn: async () =>
      (await unwrap(LISTS[list](hostId, page) as Promise<{ data?: unknown; response: Response }>)) as Page,
  });
  // A list may answer an array of rows or an object (the security summary): shown as rows either way.
  const columns = rows.data?.data[0] ? Object.keys(rows.data.data[0]).slice(0, 7) : [];
  const total = rows.data?.meta?.total ?? rows.data?.data.length ?? 0;
  const pages = Math.max(1, Math.ceil(total / PER_PAGE));
  return (
    <section aria-labelledby="inventory-title">
      <h2 id="inventory-title">Inventory</h2>
      <div className="row" role="tablist" aria-label="Inventory lists">
        {(Object.keys(LISTS) as ListName[]).map((k) => (
          <button
            key={k}
            type="button"
            role="tab"
            aria-selected={k === list}
            className={k === list ? 'small' : 'secondary small'}
            onClick={() => {
              setList(k);
              setPage(1);
            }}
          >
            {k}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={list}>
        {rows.isPending && <p aria-live="polite">Loading {list}…</p>}
        <ErrorNotice error={rows.error} />
        {rows.data && rows.data.data.length === 0 && <p className="muted">None reported.</p>}
        {rows.data && rows.data.data.length > 0 && (
          <div className="scroll-x" tabIndex={0} role="region" aria-label={`${list} table`}>
            <table>
              <caption className="sr-only">
                {list}, page {page} of {pages}
              </caption>
              <thead>
                <tr>
                  {columns.map((c) => (
                    <th key={c} scope="col">
                      {c.replaceAll('_', ' ')}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.data.data.map((r, i) => (
                  <tr key={i}>
                    {columns.map((c) => (
                      <td key={c}>{cell(r[c])}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {rows.data && pages > 1 && (
          <div className="row">
            <button type="button" className="secondary small" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Previous
            </button>
            <span>
              Page {page} of {pages} ({total})
            </span>
            <button
              type="button"
              className="secondary small"
              disabled={page >= pages}
              onClick={() => setPage(page + 1)}
            >
              Next
            </button>
          </div>
        )}
      </div>
    </section>
  );
}
