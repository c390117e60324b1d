/** What ShowMore reads of an infinite query (TanStack Query's useInfiniteQuery result). */
interface Paged {
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => Promise<unknown>;
}

/** The button that pages in the next part of a long list, while there is one. */
export function ShowMore({ query, label }: { query: Paged; label: string }) {
  if (!query.hasNextPage) return null;
  return (
    <button
      type="button"
      className="secondary"
      onClick={() => void query.fetchNextPage()}
      disabled={query.isFetchingNextPage}
    >
      {label}
    </button>
  );
}
