import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Field } from '../../ui/Field.tsx';
import { ActionForm } from '../../ui/ActionForm.tsx';

/** The caller's saved searches and the shared ones, each a click away; the current search saved, shared or not. */
export function SavedSearches({ q, onRun }: { q: string | undefined; onRun: (q: string) => void }) {
  const qc = useQueryClient();
  const saved = useQuery({
    queryKey: ['saved-searches'],
    queryFn: () => unwrap(api.GET('/api/v1/saved-searches', { params: { query: { per_page: 100 } } })),
  });
  const [name, setName] = useState('');
  const [shared, setShared] = useState(false);
  const [open, setOpen] = useState(false);
  const save = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/saved-searches', { body: { name, query: q ?? '', is_shared: shared } })),
    onSuccess: async () => {
      setOpen(false);
      setName('');
      await qc.invalidateQueries({ queryKey: ['saved-searches'] });
    },
  });
  return (
    <div className="saved">
      <ErrorNotice error={saved.error} />
      {saved.data && saved.data.data.length > 0 && (
        <div className="row" aria-label="Saved searches" role="group">
          {saved.data.data.map((s) => (
            <button key={s.id} type="button" className="secondary small" title={s.query} onClick={() => onRun(s.query)}>
              {s.name}
              {s.is_shared ? ' (shared)' : ''}
            </button>
          ))}
        </div>
      )}
      {q &&
        (open ? (
          <ActionForm className="row" aria-label="Save this search" onAction={() => save.mutate()}>
            <Field
              label="Name of the search"
              name="search-name"
              required
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
            <label className="check">
              <input type="checkbox" checked={shared} onChange={(e) => setShared(e.target.checked)} /> Shared with
              everyone
            </label>
            <button type="submit" disabled={save.isPending}>
              Save
            </button>
            <ErrorNotice error={save.error} />
          </ActionForm>
        ) : (
          <button type="button" className="secondary small" onClick={() => setOpen(true)}>
            Save this search
          </button>
        ))}
    </div>
  );
}
