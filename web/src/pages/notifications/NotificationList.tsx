import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { SelectField } from '../../ui/SelectField.tsx';
import { formatTime } from '../../ui/time.ts';
import { Pager } from './Pager.tsx';
import type { Notification } from './types.ts';

const PER_PAGE = 50;
type Status = NonNullable<Notification['status']>;

/** A client's notifications, newest first, each firing one acknowledgeable with notifications:write. */
export function NotificationList({ clientId, writes }: { clientId: string; writes: boolean }) {
  const qc = useQueryClient();
  const [status, setStatus] = useState<Status | ''>('');
  const [page, setPage] = useState(1);
  const list = useQuery({
    queryKey: ['notifications', clientId, status, page],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/notifications', {
          params: { query: { client_id: clientId, page, per_page: PER_PAGE, ...(status ? { status } : {}) } },
        }),
      ),
    // What is firing changes on its own: looked at again while the page is open.
    refetchInterval: 30_000,
  });
  const ack = useMutation({
    mutationFn: (id: string) =>
      unwrap(api.POST('/api/v1/notifications/{id}/acknowledge', { params: { path: { id } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: ['notifications', clientId] }),
  });
  const rows = list.data?.data ?? [];
  return (
    <section aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications</h2>
      <SelectField
        label="Status"
        name="status"
        value={status}
        onChange={(e) => {
          setStatus(e.target.value as Status | '');
          setPage(1);
        }}
      >
        <option value="">Firing and resolved</option>
        <option value="firing">Firing</option>
        <option value="resolved">Resolved</option>
      </SelectField>
      {list.isPending && <p aria-live="polite">Loading notifications…</p>}
      <ErrorNotice error={list.error ?? ack.error} />
      {list.data && rows.length === 0 && <p>No notifications{status ? ` ${status}` : ''}.</p>}
      {rows.length > 0 && (
        <div className="scroll-x" tabIndex={0} role="region" aria-label="Notifications table">
          <table>
            <caption className="sr-only">Notifications of this client, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Title</th>
                <th scope="col">Count</th>
                <th scope="col">Step</th>
                <th scope="col">Held back</th>
                <th scope="col">First</th>
                <th scope="col">Last</th>
                <th scope="col">Acknowledged</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((n) => (
                <tr key={n.id}>
                  <td>
                    <span className={`status ${n.status}`}>{n.status}</span>
                    {n.resolved_at && <div className="muted small">{formatTime(n.resolved_at)}</div>}
                  </td>
                  <td>
                    {n.title} <span className="badge">{n.severity}</span>
                  </td>
                  <td>{n.count}</td>
                  {/* The API counts steps from 0; people count them from 1. */}
                  <td>{n.step + 1}</td>
                  <td>{n.suppressed ? 'yes, by a maintenance window' : 'no'}</td>
                  <td>{formatTime(n.first_at)}</td>
                  <td>{formatTime(n.last_at)}</td>
                  <td>
                    {n.acknowledged_at ? (
                      <>
                        {n.acknowledged_by ?? 'someone'}
                        <div className="muted small">{formatTime(n.acknowledged_at)}</div>
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td>
                    {writes && n.status === 'firing' && !n.acknowledged_at && (
                      <button
                        type="button"
                        className="small"
                        aria-label={`Acknowledge ${n.title}`}
                        onClick={() => ack.mutate(n.id)}
                        disabled={ack.isPending}
                      >
                        Acknowledge
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.data && (
        <Pager label="notifications" page={page} perPage={PER_PAGE} total={list.data.meta.total} onPage={setPage} />
      )}
    </section>
  );
}
