import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap } from '../../api/client.ts';
import type { Paging } from './Pager.tsx';

/** Rows per page of a client's rules, windows and notifications. */
const PER_PAGE = 50;

/**
 * A list the API pages, read one page at a time: the page is state here and the last part of the query key, so the
 * lists' invalidations by `queryKey` reach every page. `fetchPage` makes the call with the page's query parameters.
 */
export function usePagedQuery<T>(
  queryKey: readonly unknown[],
  fetchPage: (paging: { page: number; per_page: number }) => Promise<{ data?: T; error?: unknown; response: Response }>,
  options: { refetchInterval?: number } = {},
) {
  const [page, setPage] = useState(1);
  const query = useQuery({
    queryKey: [...queryKey, page],
    queryFn: () => unwrap(fetchPage({ page, per_page: PER_PAGE })),
    ...options,
  });
  const paging: Paging = { page, perPage: PER_PAGE, onPage: setPage };
  return { query, paging };
}
