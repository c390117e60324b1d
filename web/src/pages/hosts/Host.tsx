import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from '@tanstack/react-router';
import { useMemo, useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { Field } from '../../ui/Field.tsx';
import { formatTime } from '../../ui/time.ts';
import { AgentRevoke, TagsEditor, WatchConfig } from './HostAdmin.tsx';
import { Inventory } from './Inventory.tsx';
import { MetricChart, type Mark } from './MetricChart.tsx';
import { RANGES, type RangeKey } from './series.ts';
import { ActionForm } from '../../ui/ActionForm.tsx';
import { can, useMe } from '../../auth/permissions.ts';

const CHARTS = [
  { title: 'CPU', metric: 'cpu_usage_percent', unit: '%' },
  { title: 'Memory', metric: 'memory_usage_percent', unit: '%' },
  { title: 'Disk', metric: 'filesystem_usage_percent', unit: '%', labelled: true },
  { title: 'Network in', metric: 'network_receive_bytes_total', unit: 'B/s', counter: true, labelled: true },
] as const;

/** A host: its facts, labels and agent, its charts over a chosen range with notes and markers, and its timeline. */
export function Host() {
  const { hostId } = useParams({ strict: false }) as { hostId: string };
  const qc = useQueryClient();
  const [rangeKey, setRangeKey] = useState<RangeKey>('1h');
  // The range is fixed when chosen (and on refresh), so every chart and list of it agree.
  const [now, setNow] = useState(() => Date.now());
  const range = useMemo(() => ({ start: now - RANGES[rangeKey], end: now }), [now, rangeKey]);
  const iso = { start: new Date(range.start).toISOString(), end: new Date(range.end).toISOString() };
  const host = useQuery({
    queryKey: ['host', hostId],
    queryFn: () => unwrap(api.GET('/api/v1/hosts/{id}', { params: { path: { id: hostId } } })),
  });
  const me = useMe();
  const clientId = host.data?.data.client_id;
  // What the role lets the user see here: charts, notes and markers need metrics:read; the timeline shows the kinds
  // of event the user may read (deploys and file changes, agent status, alerts) and is left out when none.
  const allowed = (permission: string): boolean => clientId !== undefined && can(me.data?.data, permission, clientId);
  const seesCharts = allowed('metrics:read');
  const seesTimeline = ['changes:read', 'hosts:read', 'alerts:read'].some(allowed);
  const writesNotes = allowed('annotations:write');
  const notes = useQuery({
    enabled: seesCharts,
    queryKey: ['notes', hostId, iso.start, iso.end],
    queryFn: () => unwrap(api.GET('/api/v1/annotations', { params: { query: { host_id: hostId, ...iso } } })),
  });
  const markers = useQuery({
    enabled: seesCharts,
    queryKey: ['markers', hostId, iso.start, iso.end],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/chart-markers', {
          // The route takes the target and range too; its document lists only `types`.
          params: { query: { host_id: hostId, ...iso } as { types?: string } },
        }),
      ),
  });
  const timeline = useQuery({
    enabled: seesTimeline,
    queryKey: ['timeline', hostId, iso.start, iso.end],
    queryFn: () => unwrap(api.GET('/api/v1/events/timeline', { params: { query: { host_id: hostId, ...iso } } })),
  });
  // One list per answer, not per render: each new list redraws every chart.
  const marks = useMemo<Mark[]>(
    () => [
      ...(notes.data?.data ?? []).map((n) => ({
        id: n.id,
        kind: 'note' as const,
        start: Date.parse(n.timestamp),
        ...(n.ends_at ? { end: Date.parse(n.ends_at) } : {}),
        label: n.text,
      })),
      ...(markers.data?.data.alerts ?? []).map((a) => ({
        id: a.id,
        kind: 'alert' as const,
        start: Date.parse(a.fired_at),
        ...(a.resolved_at ? { end: Date.parse(a.resolved_at) } : {}),
        label: `${a.severity} ${a.name} (${a.status})`,
      })),
      ...(markers.data?.data.deploys ?? []).map((d) => ({
        id: d.id,
        kind: 'deploy' as const,
        start: Date.parse(d.at),
        label: `${d.app} ${d.revision}${d.failed ? ' (failed)' : ''}`,
      })),
    ],
    [notes.data, markers.data],
  );
  const [draft, setDraft] = useState<{ start: number; end: number } | undefined>();
  const [open, setOpen] = useState<Mark | undefined>();
  const [text, setText] = useState('');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/annotations', {
          body: {
            scope: 'host',
            host_id: hostId,
            timestamp: new Date(draft!.start).toISOString(),
            ends_at: new Date(draft!.end).toISOString(),
            text,
          },
        }),
      ),
    onSuccess: async () => {
      setDraft(undefined);
      setText('');
      await qc.invalidateQueries({ queryKey: ['notes', hostId] });
      await qc.invalidateQueries({ queryKey: ['timeline', hostId] });
    },
  });

  const h = host.data?.data;
  return (
    <>
      <p>
        <Link to="/hosts">Hosts</Link>
      </p>
      <ErrorNotice error={host.error} />
      {host.isPending && <p aria-live="polite">Loading the host…</p>}
      {h && (
        <>
          <h1>
            {h.hostname} <span className={`status ${h.agent_status}`}>{h.agent_status}</span>
          </h1>
          <dl className="facts">
            <dt>Address</dt>
            <dd>{h.ip_address ?? '—'}</dd>
            <dt>System</dt>
            <dd>{[h.os, h.os_version, h.arch].filter(Boolean).join(' ')}</dd>
            <dt>Kernel</dt>
            <dd>{h.kernel_version ?? '—'}</dd>
            <dt>CPU cores, memory</dt>
            <dd>
              {h.cpu_cores ?? '—'} cores,{' '}
              {h.memory_total_bytes ? `${(h.memory_total_bytes / 2 ** 30).toFixed(1)} GiB` : '—'}
            </dd>
            <dt>Agent</dt>
            <dd>
              {h.agent_version ?? '—'}, last seen {h.last_seen_at ? formatTime(h.last_seen_at) : 'never'}
            </dd>
            <dt>Labels</dt>
            <dd>
              {Object.entries(h.labels ?? {})
                .map(([k, v]) => `${k}=${String(v)}`)
                .join(', ') || '—'}
            </dd>
            <dt>Tags</dt>
            <dd>
              {Object.entries(h.tags ?? {})
                .map(([k, v]) => `${k}=${String(v)}`)
                .join(', ') || '—'}{' '}
              <TagsEditor hostId={hostId} clientId={h.client_id} tags={h.tags ?? {}} />
            </dd>
          </dl>
          <AgentRevoke agentId={h.agent_id} clientId={h.client_id} hostId={hostId} />
        </>
      )}
      {seesCharts && (
        <>
          <div className="row spread">
            <h2>Charts</h2>
            <div className="row" role="group" aria-label="Range">
              {(Object.keys(RANGES) as RangeKey[]).map((k) => (
                <button
                  key={k}
                  type="button"
                  className={k === rangeKey ? '' : 'secondary'}
                  aria-pressed={k === rangeKey}
                  onClick={() => {
                    setRangeKey(k);
                    setNow(Date.now());
                  }}
                >
                  {k}
                </button>
              ))}
            </div>
          </div>
          <p className="muted small">
            {writesNotes && 'Drag across a chart to add a note for that span; '}
            {writesNotes ? 'the marks' : 'The marks'} open what they stand for.
          </p>
          {draft && (
            <ActionForm className="card inline" aria-label="New note" onAction={() => create.mutate()}>
              <p>
                Note for {formatTime(new Date(draft.start).toISOString())} –{' '}
                {formatTime(new Date(draft.end).toISOString())}
              </p>
              <Field
                label="Note"
                name="note"
                required
                maxLength={500}
                value={text}
                onChange={(e) => setText(e.target.value)}
                autoFocus
              />
              <ErrorNotice error={create.error} />
              <div className="row">
                <button type="submit" disabled={create.isPending}>
                  Add the note
                </button>
                <button type="button" className="secondary" onClick={() => setDraft(undefined)}>
                  Cancel
                </button>
              </div>
            </ActionForm>
          )}
          {open && (
            <div className="card inline" role="dialog" aria-label={`The ${open.kind}`}>
              <p>
                <strong>{open.kind}</strong> {formatTime(new Date(open.start).toISOString())}
                {open.end !== undefined && ` – ${formatTime(new Date(open.end).toISOString())}`}
              </p>
              <p>{open.label}</p>
              <button type="button" className="secondary" onClick={() => setOpen(undefined)}>
                Close
              </button>
            </div>
          )}
        </>
      )}
      <div className="host-body">
        {seesCharts && (
          <div className="charts">
            {CHARTS.map((c) => (
              <MetricChart
                key={c.metric}
                hostId={hostId}
                range={range}
                marks={marks}
                {...(writesNotes ? { onSelect: setDraft } : {})}
                onOpen={setOpen}
                {...c}
              />
            ))}
          </div>
        )}
        {seesTimeline && (
          <aside aria-labelledby="timeline-title" className="timeline">
            <h2 id="timeline-title">Timeline</h2>
            <ErrorNotice error={timeline.error ?? notes.error} />
            <ol data-testid="timeline">
              {[
                ...(timeline.data?.data ?? []).map((e) => ({ at: e.timestamp, title: e.title, kind: e.event_type })),
                ...(notes.data?.data ?? []).map((n) => ({ at: n.timestamp, title: n.text, kind: 'note' })),
              ]
                .sort((a, b) => Date.parse(b.at) - Date.parse(a.at))
                .map((e, i) => (
                  <li key={`${e.at}-${i}`}>
                    <span className="muted small">{formatTime(e.at)}</span> <span className="badge">{e.kind}</span>{' '}
                    {e.title}
                  </li>
                ))}
            </ol>
            {timeline.data && timeline.data.data.length === 0 && (notes.data?.data.length ?? 0) === 0 && (
              <p className="muted">Nothing happened in this range.</p>
            )}
          </aside>
        )}
      </div>
      <Inventory hostId={hostId} />
      <WatchConfig hostId={hostId} />
    </>
  );
}
