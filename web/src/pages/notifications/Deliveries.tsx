import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { formatTime } from '../../ui/time.ts';
import { PagedTable } from './PagedTable.tsx';
import { DELIVERIES_PER_PAGE, useDeliveries } from './queries.ts';
import type { Delivery } from './types.ts';

/** One attempt in words: its answer (or why none came) and how long it took. */
export function attemptText(a: Delivery['attempts'][number]): string {
  const answer = a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`;
  return `${answer} in ${Math.round(a.latency_ms)} ms${a.error ? `: ${a.error}` : ''}`;
}

/** A channel's delivery log, newest first, with every attempt; a failed delivery can be sent again. */
export function Deliveries({
  channelId,
  channelName,
  writes,
}: {
  channelId: string;
  channelName: string;
  writes: boolean;
}) {
  const qc = useQueryClient();
  const [page, setPage] = useState(1);
  const log = useDeliveries(channelId, page);
  const redeliver = useMutation({
    mutationFn: (id: string) =>
      unwrap(api.POST('/api/v1/notification-deliveries/{id}/redeliver', { params: { path: { id } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: ['notification-deliveries', channelId] }),
  });
  return (
    <div className="nested">
      <PagedTable
        query={log}
        actionError={redeliver.error}
        loading="Loading the deliveries…"
        empty={<p className="muted">Nothing sent to this channel yet.</p>}
        label={`Deliveries of ${channelName}`}
        caption={`Deliveries of ${channelName}, newest first`}
        columns={['Time', 'Kind', 'Status', 'Attempts']}
        actions
        paging={{ page, perPage: DELIVERIES_PER_PAGE, onPage: setPage }}
        pagerLabel="deliveries"
        row={(d) => (
          <tr key={d.id}>
            <td>{formatTime(d.created_at)}</td>
            <td>
              {d.kind}
              {d.kind !== 'test' && <span className="muted small"> (step {d.step + 1})</span>}
            </td>
            <td>
              <span className={`status ${d.status}`}>{d.status}</span>
              {d.reason && <div className="muted small">{d.reason}</div>}
            </td>
            <td>
              {d.attempts.length === 0 ? (
                '—'
              ) : (
                <ol className="attempts">
                  {d.attempts.map((a, i) => (
                    <li key={i}>
                      <time dateTime={a.at}>{formatTime(a.at)}</time>: {attemptText(a)}
                    </li>
                  ))}
                </ol>
              )}
            </td>
            <td>
              {writes && d.status === 'failed' && (
                <button
                  type="button"
                  className="secondary small"
                  aria-label={`Redeliver the ${d.kind} delivery of ${formatTime(d.created_at)}`}
                  onClick={() => redeliver.mutate(d.id)}
                  disabled={redeliver.isPending}
                >
                  Redeliver
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </div>
  );
}
