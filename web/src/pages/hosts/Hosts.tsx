import { useInfiniteQuery } from '@tanstack/react-query';
import { Link, useNavigate, useSearch } from '@tanstack/react-router';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState } from 'react';
import { api, ApiError, unwrap } from '../../api/client.ts';
import { session } from '../../auth/session.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { SavedSearches } from './SavedSearches.tsx';
import { SearchBar } from './SearchBar.tsx';
import { saveFile } from '../../ui/save-file.ts';
import { markOnce } from '../../ui/timing.ts';

/** Every host: PQL has no "all", and every host has a hostname. */
export const ALL_HOSTS = 'host.hostname EXISTS';
const PER_PAGE = 100;
const ROW_PX = 40;

/** Every host the caller may see, as a virtualized table paged in as it scrolls, searched with PQL. */
export function Hosts() {
  const navigate = useNavigate();
  const search = useSearch({ strict: false }) as { q?: unknown };
  const q = typeof search.q === 'string' && search.q.trim() ? search.q : ALL_HOSTS;
  const hosts = useInfiniteQuery({
    queryKey: ['search', q],
    initialPageParam: 1,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v1/search', { params: { query: { q, page: pageParam, per_page: PER_PAGE } } })),
    getNextPageParam: (last) =>
      last.meta.page * last.meta.per_page < last.meta.total ? last.meta.page + 1 : undefined,
  });
  const rows = hosts.data?.pages.flatMap((p) => p.data) ?? [];
  const total = hosts.data?.pages[0]?.meta.total;
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_PX,
    overscan: 10,
  });
  const items = virtual.getVirtualItems();
  const shown = items.length > 0;
  useEffect(() => {
    if (shown) markOnce('console:hosts-rows');
  }, [shown]);
  const last = items[items.length - 1];
  useEffect(() => {
    if (last && last.index >= rows.length - 20 && hosts.hasNextPage && !hosts.isFetchingNextPage)
      void hosts.fetchNextPage();
  }, [last, rows.length, hosts]);

  return (
    <>
      <h1>Hosts</h1>
      <SearchBar
        key={q}
        initial={q === ALL_HOSTS ? '' : q}
        onSearch={(next) => void navigate({ to: '/hosts', search: { q: next } })}
      />
      <SavedSearches
        q={q === ALL_HOSTS ? undefined : q}
        onRun={(next) => void navigate({ to: '/hosts', search: { q: next } })}
      />
      <div className="row spread">
        <p aria-live="polite">{total === undefined ? '' : `${total} host${total === 1 ? '' : 's'}`}</p>
        <CsvExport q={q} />
      </div>
      {hosts.isPending && <p aria-live="polite">Loading hosts…</p>}
      {hosts.error instanceof ApiError && hosts.error.status === 403 ? (
        <p>Your role does not include reading hosts.</p>
      ) : (
        <ErrorNotice error={hosts.error} />
      )}
      {hosts.data && rows.length === 0 && <p>No host matches this search.</p>}
      {rows.length > 0 && (
        <div className="grid" role="table" aria-label="Hosts" aria-rowcount={total}>
          <div className="grid-row grid-head" role="row">
            {['Host', 'Status', 'OS', 'Address', 'Tags'].map((h) => (
              <span key={h} role="columnheader">
                {h}
              </span>
            ))}
          </div>
          <div
            ref={scroller}
            className="grid-body"
            data-testid="hosts-scroller"
            style={{ height: `min(70vh, ${Math.max(1, rows.length) * ROW_PX + 2}px)` }}
          >
            <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
              {items.map((item) => {
                const h = rows[item.index]!;
                return (
                  <div
                    key={h.id}
                    role="row"
                    aria-rowindex={item.index + 2}
                    className="grid-row"
                    style={{
                      position: 'absolute',
                      top: 0,
                      left: 0,
                      right: 0,
                      height: ROW_PX,
                      transform: `translateY(${item.start}px)`,
                    }}
                  >
                    <span role="cell">
                      <Link to="/hosts/$hostId" params={{ hostId: h.id }}>
                        {h.hostname}
                      </Link>
                    </span>
                    <span role="cell">
                      <span className={`status ${h.agent_status}`}>{h.agent_status}</span>
                    </span>
                    <span role="cell">{[h.os, h.arch].filter(Boolean).join(' · ')}</span>
                    <span role="cell">{h.ip_address ?? '—'}</span>
                    <span role="cell" className="muted">
                      {Object.entries(h.tags ?? {})
                        .map(([k, v]) => `${k}=${String(v)}`)
                        .join(', ')}
                    </span>
                  </div>
                );
              })}
            </div>
          </div>
        </div>
      )}
    </>
  );
}

/** The search as CSV (the API's own export), fetched with the access token and saved as a file. */
function CsvExport({ q }: { q: string }) {
  const [error, setError] = useState<unknown>();
  const download = async (): Promise<void> => {
    setError(undefined);
    const token = await session.accessToken();
    const res = await fetch(`/api/v1/search?${new URLSearchParams({ q, format: 'csv' })}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    if (!res.ok) {
      setError(new ApiError(res.status, await res.json().catch(() => undefined)));
      return;
    }
    saveFile(await res.blob(), 'hosts.csv');
  };
  return (
    <div>
      <button type="button" className="secondary" onClick={() => void download()}>
        Export CSV
      </button>
      <ErrorNotice error={error} />
    </div>
  );
}
