/** Where the reader is in a paged list. */
export interface Paging {
  page: number;
  perPage: number;
  onPage: (page: number) => void;
}

/** Previous and next for a paged list, with where the reader is; nothing when it fits on one page. */
export function Pager({ label, page, perPage, total, onPage }: Paging & { label: string; total: number }) {
  const pages = Math.max(1, Math.ceil(total / perPage));
  if (pages <= 1) return null;
  return (
    <div className="row" role="group" aria-label={`Pages of ${label}`}>
      <button type="button" className="secondary small" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {pages} ({total})
      </span>
      <button type="button" className="secondary small" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </div>
  );
}
