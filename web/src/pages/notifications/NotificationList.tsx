import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { SelectField } from '../../ui/SelectField.tsx';
import { formatTime } from '../../ui/time.ts';
import { PagedTable } from './PagedTable.tsx';
import type { Notification } from './types.ts';
import { usePagedQuery } from './use-paged-query.ts';

type Status = NonNullable<Notification['status']>;

/** A client's notifications, newest first, each firing one acknowledgeable with notifications:write. */
export function NotificationList({ clientId, writes }: { clientId: string; writes: boolean }) {
  const qc = useQueryClient();
  const [status, setStatus] = useState<Status | ''>('');
  const list = usePagedQuery(
    ['notifications', clientId, status],
    (paging) =>
      api.GET('/api/v1/notifications', {
        params: { query: { client_id: clientId, ...paging, ...(status ? { status } : {}) } },
      }),
    // What is firing changes on its own: looked at again while the page is open.
    { refetchInterval: 30_000 },
  );
  const ack = useMutation({
    mutationFn: (id: string) =>
      unwrap(api.POST('/api/v1/notifications/{id}/acknowledge', { params: { path: { id } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: ['notifications', clientId] }),
  });
  return (
    <section aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications</h2>
      <SelectField
        label="Status"
        name="status"
        value={status}
        onChange={(e) => {
          setStatus(e.target.value as Status | '');
          list.paging.onPage(1);
        }}
      >
        <option value="">Firing and resolved</option>
        <option value="firing">Firing</option>
        <option value="resolved">Resolved</option>
      </SelectField>
      <PagedTable
        query={list.query}
        actionError={ack.error}
        loading="Loading notifications…"
        empty={<p>No notifications{status ? ` ${status}` : ''}.</p>}
        label="Notifications table"
        caption="Notifications of this client, newest first"
        columns={['Status', 'Title', 'Count', 'Step', 'Held back', 'First', 'Last', 'Acknowledged']}
        actions
        paging={list.paging}
        pagerLabel="notifications"
        row={(n) => (
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
        )}
      />
    </section>
  );
}
