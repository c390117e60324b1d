import type { ReactNode } from 'react';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Pager, type Paging } from './Pager.tsx';

/**
 * A paged list as a table, the way every list of these tabs reads: loading, the error, an empty text, the table in a
 * scrollable region, then the pager. The rows render their own cells (`row` returns a keyed `<tr>`).
 */
export function PagedTable<T>({
  query,
  actionError,
  loading,
  empty,
  label,
  caption,
  columns,
  actions,
  paging,
  pagerLabel,
  row,
}: {
  query: { isPending: boolean; error: unknown; data: { data: T[]; meta: { total: number } } | undefined };
  /** A failed action on a row, shown where the list's own error would be. */
  actionError?: unknown;
  /** The text while the first page loads, e.g. `Loading rules…`. */
  loading: string;
  /** What stands for a list with no rows. */
  empty: ReactNode;
  /** The scrollable region's name. */
  label: string;
  caption: string;
  columns: readonly string[];
  /** A last column for the rows' buttons, named for screen readers only. */
  actions: boolean;
  paging: Paging;
  /** What the pager's group is named after: `Pages of ${pagerLabel}`. */
  pagerLabel: string;
  row: (item: T) => ReactNode;
}) {
  const rows = query.data?.data ?? [];
  return (
    <>
      {query.isPending && <p aria-live="polite">{loading}</p>}
      <ErrorNotice error={query.error ?? actionError} />
      {query.data && rows.length === 0 && empty}
      {rows.length > 0 && (
        <div className="scroll-x" tabIndex={0} role="region" aria-label={label}>
          <table>
            <caption className="sr-only">{caption}</caption>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c} scope="col">
                    {c}
                  </th>
                ))}
                {actions && (
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>{rows.map((r) => row(r))}</tbody>
          </table>
        </div>
      )}
      {query.data && <Pager label={pagerLabel} {...paging} total={query.data.meta.total} />}
    </>
  );
}
