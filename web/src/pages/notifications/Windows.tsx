import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { formatTime } from '../../ui/time.ts';
import { ConfirmButton } from './ConfirmButton.tsx';
import { PagedTable } from './PagedTable.tsx';
import { useEnvironments } from './queries.ts';
import { utc } from './time-zones.ts';
import type { MaintenanceWindow } from './types.ts';
import { usePagedQuery } from './use-paged-query.ts';
import { WindowForm } from './WindowForm.tsx';

const DAYS_AHEAD = 30;

/** A client's maintenance windows, newest first, each with its occurrences of the next 30 days; and a new one. */
export function Windows({ clientId, writes }: { clientId: string; writes: boolean }) {
  const windows = usePagedQuery(['maintenance-windows', clientId], (paging) =>
    api.GET('/api/v1/maintenance-windows', { params: { query: { client_id: clientId, ...paging } } }),
  );
  const envs = useEnvironments(clientId);
  // One range for every window's occurrences while the tab is open (the query keys stay put).
  const [range] = useState(() => {
    const from = Math.floor(Date.now() / 60_000) * 60_000;
    return { from: utc(from), to: utc(from + DAYS_AHEAD * 86_400_000) };
  });
  const envName = (id: string | null): string =>
    id === null ? 'whole client' : (envs.data?.data.find((e) => e.id === id)?.name ?? id);
  return (
    <section aria-labelledby="windows-title">
      <h2 id="windows-title">Maintenance windows</h2>
      <p className="muted small">Notifications whose cause is in a window's scope are held back while it lasts.</p>
      {writes && <WindowForm clientId={clientId} />}
      <PagedTable
        query={windows.query}
        loading="Loading maintenance windows…"
        empty={<p>No maintenance windows yet.</p>}
        label="Maintenance windows table"
        caption="Maintenance windows of this client, newest first"
        columns={['Name', 'Scope', 'Starts', 'Duration', 'Recurrence', `Next ${DAYS_AHEAD} days`]}
        actions={writes}
        paging={windows.paging}
        pagerLabel="maintenance windows"
        row={(w) => (
          <tr key={w.id}>
            <th scope="row">
              {w.name}
              {w.active && <span className="badge">in force now</span>}
            </th>
            <td>
              {envName(w.environment_id)}
              {w.host_id && <div className="muted small">host {w.host_id}</div>}
            </td>
            <td>
              {w.starts_at.replace('T', ' ')} <span className="muted small">{w.timezone}</span>
            </td>
            <td>{w.duration_minutes} min</td>
            <td>{w.rrule ? <code>{w.rrule}</code> : 'once'}</td>
            <td>
              <Occurrences window={w} from={range.from} to={range.to} />
            </td>
            {writes && (
              <td>
                <DeleteWindow window={w} />
              </td>
            )}
          </tr>
        )}
      />
    </section>
  );
}

/** When a window holds notifications back in the range, in the reader's own time zone. */
function Occurrences({ window: w, from, to }: { window: MaintenanceWindow; from: string; to: string }) {
  const occ = useQuery({
    queryKey: ['maintenance-occurrences', w.id, from, to, w.updated_at],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/maintenance-windows/{id}/occurrences', {
          params: { path: { id: w.id }, query: { from, to } },
        }),
      ),
  });
  if (occ.isPending) return <span aria-live="polite">Loading…</span>;
  if (occ.error) return <ErrorNotice error={occ.error} />;
  const list = occ.data.data;
  if (list.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="occurrences" aria-label={`Next occurrences of ${w.name}`}>
      {list.slice(0, 10).map((o) => (
        <li key={o.start}>
          <time dateTime={o.start}>{formatTime(o.start)}</time> – <time dateTime={o.end}>{formatTime(o.end)}</time>
        </li>
      ))}
      {list.length > 10 && <li className="muted">and {list.length - 10} more</li>}
    </ul>
  );
}

function DeleteWindow({ window: w }: { window: MaintenanceWindow }) {
  const qc = useQueryClient();
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/api/v1/maintenance-windows/{id}', { params: { path: { id: w.id } } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['maintenance-windows', w.client_id] }),
  });
  return (
    <ConfirmButton
      label="Delete"
      question={`Delete the maintenance window “${w.name}”? It no longer holds notifications back.`}
      confirm="Delete the window"
      onConfirm={() => remove.mutate()}
      pending={remove.isPending}
      error={remove.error}
    />
  );
}
