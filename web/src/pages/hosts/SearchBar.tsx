import { useQuery } from '@tanstack/react-query';
import { useEffect, useId, useState, type FormEvent } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { currentToken, errorPosition, splitAt } from './pql-error.ts';

/**
 * The PQL search bar: the query is checked as it is typed (`POST /search/validate`) and an error is shown with the
 * character it points at underlined; the fields endpoint completes the field being typed.
 */
export function SearchBar({ initial, onSearch }: { initial: string; onSearch: (q: string) => void }) {
  const [query, setQuery] = useState(initial);
  const [checked, setChecked] = useState(initial);
  const id = useId();
  useEffect(() => {
    const t = setTimeout(() => setChecked(query), 250);
    return () => clearTimeout(t);
  }, [query]);
  const validation = useQuery({
    queryKey: ['pql-validate', checked],
    enabled: checked.trim() !== '',
    queryFn: () => unwrap(api.POST('/api/v1/search/validate', { body: { query: checked } })),
    staleTime: Infinity,
  });
  const fields = useQuery({
    queryKey: ['pql-fields'],
    queryFn: () => unwrap(api.GET('/api/v1/search/fields')),
    staleTime: Infinity,
  });
  const error = checked === query && validation.data && !validation.data.data.valid ? validation.data.data.error : '';
  const position = error ? errorPosition(error) : undefined;
  const token = currentToken(query);
  const suggestions =
    token.length >= 2
      ? (fields.data?.data ?? [])
          .map((f) => `${f.prefix}.${f.name}`)
          .filter((f) => f.startsWith(token) && f !== token)
          .slice(0, 8)
      : [];
  const submit = (e: FormEvent): void => {
    e.preventDefault();
    onSearch(query.trim());
  };
  return (
    <form className="search" onSubmit={submit} role="search">
      <label htmlFor={id}>Search hosts (PQL)</label>
      <div className="row">
        <input
          id={id}
          className="pql"
          spellCheck={false}
          autoComplete="off"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
        />
        <button type="submit">Search</button>
      </div>
      {suggestions.length > 0 && (
        <div className="suggestions" aria-label="Fields">
          {suggestions.map((s) => (
            <button
              key={s}
              type="button"
              className="secondary small"
              onClick={() => setQuery(`${query.slice(0, query.length - token.length)}${s} `)}
            >
              {s}
            </button>
          ))}
        </div>
      )}
      {error && (
        <div id={`${id}-error`} className="field-error" role="alert" data-testid="pql-error">
          {position !== undefined && <PointedQuery query={query} position={position} />}
          <span>{error}</span>
        </div>
      )}
    </form>
  );
}

function PointedQuery({ query, position }: { query: string; position: number }) {
  const { before, at, after } = splitAt(query, position);
  return (
    <code className="pointed" aria-hidden="true">
      {before}
      <mark>{at}</mark>
      {after}
    </code>
  );
}
