import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, unwrap } from '../../api/client.ts';
import { ErrorNotice } from '../../ui/ErrorNotice.tsx';
import { formatTime } from '../../ui/time.ts';
import { markOnce } from '../../ui/timing.ts';
import { preferredSeries, toSeries } from './series.ts';

/** Something drawn on every chart of a range: a note (a point or a span), an alert's window, a deploy. */
export interface Mark {
  id: string;
  kind: 'note' | 'alert' | 'deploy';
  start: number;
  end?: number;
  label: string;
}

export interface ChartProps {
  hostId: string;
  title: string;
  metric: string;
  unit: string;
  counter?: boolean;
  /** A labelled metric (filesystem usage by mount, network by interface): one of its series, see preferredSeries. */
  labelled?: boolean;
  range: { start: number; end: number };
  marks: Mark[];
  /** Where a span dragged across the chart goes; without it (the user may not write notes) dragging does nothing. */
  onSelect?: (span: { start: number; end: number }) => void;
  onOpen: (mark: Mark) => void;
}

const COLORS = { note: '#7c5cbf', alert: '#c0392b', deploy: '#1e8449' } as const;

/** One metric of a host over the range, in uPlot; dragging across it proposes a note for that span. */
export function MetricChart(p: ChartProps) {
  const start = new Date(p.range.start).toISOString();
  const end = new Date(p.range.end).toISOString();
  const series = useQuery({
    // Asked again with each range: a new host's labelled series appear only after its first samples.
    queryKey: ['series', p.hostId, p.metric, start, end],
    // The last answer stands while the next is asked: the chart is not torn down between two ranges.
    placeholderData: (previous) => previous,
    enabled: p.labelled === true,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/hosts/{id}/metrics/{metricName}/series', {
          params: { path: { id: p.hostId, metricName: p.metric } },
        }),
      ),
  });
  const labelsKey = p.labelled ? preferredSeries(series.data?.data) : '';
  const points = useQuery({
    queryKey: ['metric', p.hostId, p.metric, labelsKey, start, end],
    enabled: labelsKey !== undefined,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/hosts/{id}/metrics/{metricName}', {
          params: { path: { id: p.hostId, metricName: p.metric }, query: { start, end, labels_key: labelsKey ?? '' } },
        }),
      ),
  });
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [layout, setLayout] = useState(0);
  const marks = useRef(p.marks);
  marks.current = p.marks;
  const handlers = useRef(p);
  handlers.current = p;

  useEffect(() => {
    const el = box.current;
    if (!el || !points.data || points.data.data.length === 0) return;
    const data = toSeries(points.data.data, p.counter === true);
    const u = new uPlot(
      {
        width: el.clientWidth || 600,
        height: 180,
        scales: { x: { time: true, min: p.range.start / 1000, max: p.range.end / 1000 } },
        series: [
          {},
          {
            label: p.title,
            stroke: '#2f7dd1',
            width: 1.5,
            fill: 'rgba(47,125,209,0.12)',
            value: (_u, v) => (v == null ? '—' : `${v.toFixed(1)} ${p.unit}`),
          },
        ],
        axes: [{}, { values: (_u, ticks) => ticks.map((t) => `${t} ${p.unit}`), size: 70 }],
        cursor: { drag: { x: true, y: false, setScale: false } },
        legend: { show: false },
        hooks: {
          draw: [
            (uu) => {
              drawMarks(uu, marks.current);
              markOnce(`console:chart:${p.metric}:${p.range.end - p.range.start}`, { points: data[0].length });
            },
          ],
          setSelect: [
            (uu) => {
              if (uu.select.width < 4 || !handlers.current.onSelect) return;
              const a = uu.posToVal(uu.select.left, 'x') * 1000;
              const b = uu.posToVal(uu.select.left + uu.select.width, 'x') * 1000;
              handlers.current.onSelect({ start: Math.round(a), end: Math.round(b) });
              uu.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            },
          ],
          ready: [() => setLayout((n) => n + 1)],
        },
      },
      data as uPlot.AlignedData,
      el,
    );
    plot.current = u;
    const resize = new ResizeObserver(() => {
      u.setSize({ width: el.clientWidth, height: 180 });
      setLayout((n) => n + 1);
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [points.data, p.counter, p.range.start, p.range.end, p.title, p.unit]);

  // Marks are drawn by the draw hook: no paths to rebuild. The axes are recalculated because a plain redraw() clears
  // uPlot's pending size pass: run right after construction (a cached range mounts chart and marks in one pass) on a
  // series with no values yet, the first draw then reads axes never measured and throws.
  useEffect(() => plot.current?.redraw(false, true), [p.marks]);

  const u = plot.current;
  return (
    <figure className="chart" aria-label={`${p.title} chart`}>
      <figcaption>{p.title}</figcaption>
      {points.isPending && labelsKey !== undefined && <p aria-live="polite">Loading…</p>}
      <ErrorNotice error={points.error ?? series.error} />
      {points.data && points.data.data.length === 0 && <p className="muted">No data in this range.</p>}
      <div className="chart-area">
        <div ref={box} data-testid={`chart-${p.metric}`} data-points={points.data?.data.length ?? 0} />
        {u &&
          layout >= 0 &&
          p.marks.map((m) => {
            const x = u.valToPos(m.start / 1000, 'x');
            if (!Number.isFinite(x) || x < 0 || x > u.bbox.width / devicePixelRatio) return null;
            return (
              <button
                key={`${m.kind}-${m.id}`}
                type="button"
                className={`mark ${m.kind}`}
                style={{ left: x + u.bbox.left / devicePixelRatio - 6 }}
                aria-label={`${m.kind}: ${m.label}, ${formatTime(new Date(m.start).toISOString())}`}
                title={m.label}
                onClick={() => p.onOpen(m)}
              />
            );
          })}
      </div>
    </figure>
  );
}

function drawMarks(u: uPlot, marks: Mark[]): void {
  const { ctx, bbox } = u;
  ctx.save();
  for (const m of marks) {
    const x0 = u.valToPos(m.start / 1000, 'x', true);
    const x1 = m.end !== undefined ? u.valToPos(m.end / 1000, 'x', true) : x0;
    ctx.fillStyle = `${COLORS[m.kind]}33`;
    ctx.strokeStyle = COLORS[m.kind];
    if (x1 - x0 > 1) ctx.fillRect(x0, bbox.top, x1 - x0, bbox.height);
    ctx.beginPath();
    ctx.moveTo(x0, bbox.top);
    ctx.lineTo(x0, bbox.top + bbox.height);
    ctx.stroke();
  }
  ctx.restore();
}
