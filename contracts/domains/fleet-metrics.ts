import { z } from 'zod';
import { subjects } from '../subject.ts';
import { METRIC_NAME } from './agent-telemetry.ts';

/**
 * Host, process and container metrics (docs/api/metrics.md#routes),
 * read from VictoriaMetrics by the fleet domain; and the tenant-confined PromQL query route.
 */

const Id = z.uuid();
const Rfc3339 = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z' });

export const MetricName = z.string().max(200).regex(METRIC_NAME, 'must be a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)');

/** `start` (default one hour before `end`) and `end` (default now); at most 31 days apart, start not after end. */
export const TimeRangeQuery = z.object({ start: Rfc3339.optional(), end: Rfc3339.optional() });

/** One bucket of a chart: figures over the raw samples inside [time, time + bucket). */
export const MetricPoint = z.object({
  time: z.iso.datetime(),
  avg_value: z.number(),
  min_value: z.number(),
  max_value: z.number(),
  sample_count: z.number().int().nonnegative(),
});
export type MetricPoint = z.infer<typeof MetricPoint>;

export const MetricPointsQuery = TimeRangeQuery.extend({
  /** Comma-separated `key=value` pairs of the sample's own labels; empty = the series without such labels. */
  labels_key: z.string().max(4096).default(''),
});

// ---------------------------------------------------------------------------------------------------------------
// Latest values of several hosts

export const LATEST_LIMITS = { hosts: 100, metrics: 50, windowMinutes: 60 } as const;

const commaList = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** `host_ids` and `metrics` as the HTTP query carries them: comma-separated, both required. */
export const LatestMetricsQuery = z.object({
  host_ids: z
    .string({ error: 'is required (comma-separated host uuids)' })
    .transform(commaList)
    .pipe(
      z
        .array(z.uuid({ error: 'must be uuids' }))
        .min(1, 'is required (comma-separated host uuids)')
        .max(LATEST_LIMITS.hosts, `at most ${LATEST_LIMITS.hosts} hosts`),
    ),
  metrics: z
    .string({ error: 'is required (comma-separated metric names)' })
    .transform(commaList)
    .pipe(z.array(z.string()).max(LATEST_LIMITS.metrics, `at most ${LATEST_LIMITS.metrics} metrics`))
    // Names that cannot be metric names are dropped; none left is the 400 the spec names.
    .transform((names) => [...new Set(names.filter((n) => n.length <= 200 && METRIC_NAME.test(n)))])
    .pipe(z.array(z.string()).min(1, 'no valid metric name')),
});

export const LatestValue = z.object({
  host_id: Id,
  metric_name: z.string(),
  value: z.number(),
  time: z.iso.datetime(),
});
export type LatestValue = z.infer<typeof LatestValue>;

// ---------------------------------------------------------------------------------------------------------------
// Process and container metrics

/** The spec's process-metric names and the series the reference agent stores them as (labels pid, process_name). */
export const PROCESS_METRICS = {
  cpu_usage: 'process_cpu_usage',
  memory_usage: 'process_memory_usage',
  memory_rss: 'process_memory_rss',
  threads: 'process_threads',
} as const;
/** Container metrics (labels container_id, container_name); the counters are answered as per-second rates. */
export const CONTAINER_GAUGES = {
  cpu_usage: 'container_cpu_usage',
  memory_used: 'container_memory_used',
  memory_limit: 'container_memory_limit',
  memory_usage: 'container_memory_usage',
} as const;
export const CONTAINER_COUNTERS = {
  network_receive: 'container_network_receive',
  network_transmit: 'container_network_transmit',
  block_read: 'container_block_read',
  block_write: 'container_block_write',
} as const;

const Points = z.array(MetricPoint);
export const ProcessMetrics = z.object({
  cpu_usage: Points,
  memory_usage: Points,
  memory_rss: Points,
  threads: Points,
});
export const ContainerMetrics = z.object({
  cpu_usage: Points,
  memory_used: Points,
  memory_limit: Points,
  memory_usage: Points,
  network_receive: Points,
  network_transmit: Points,
  block_read: Points,
  block_write: Points,
});

export const ProcessMetricsQuery = TimeRangeQuery.extend({
  process_name: z.string({ error: 'is required' }).min(1, 'is required').max(1024),
});
export const Pid = z.coerce
  .number({ error: 'must be a process id' })
  .int('must be a process id')
  .min(0, 'must be a process id')
  .max(2 ** 31 - 1, 'must be a process id');
export const ContainerId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be a container id (letters, digits, _ . -)');

// ---------------------------------------------------------------------------------------------------------------
// PromQL over the caller's hosts

export const QUERY_LIMITS = {
  /** Points per series the range and step may give (Prometheus' resolution limit). */
  maxPoints: 11_000,
  maxRangeDays: 31,
} as const;

/** Prometheus duration (`60s`, `1m30s`, `500ms`) or plain seconds (`60`, `0.5`). */
export const STEP = /^(?:(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w|y))+|\d+(?:\.\d+)?)$/;

/** The fields of a PromQL range query, as the route takes them and the fleet domain is asked. */
const MetricsQueryFields = {
  query: z.string({ error: 'is required' }).min(1, 'must not be empty').max(4096, 'at most 4096 characters'),
  start: Rfc3339,
  end: Rfc3339,
  step: z.string().max(32).regex(STEP, 'must be a duration such as 60s, 5m or 1h30m, or seconds').optional(),
  host_id: Id.optional(),
  environment_id: Id.optional(),
};

/** POST /metrics/query: top-level fields, nothing else (no caller-supplied extra_label / extra_filters). */
export const MetricsQueryBody = z
  .strictObject(MetricsQueryFields, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown field(s) ${issue.keys.join(', ')}: the service sets the tenant filters itself`
        : undefined,
  })
  .refine((b) => b.host_id !== undefined || b.environment_id !== undefined, {
    message: 'host_id or environment_id is required',
    path: ['host_id'],
  });

/**
 * The confined upstream request the fleet domain builds for a query: the canonical query text the guard approved, the
 * range and step in seconds, the one tenant selector VictoriaMetrics ANDs into every series selector, and the
 * server-side timeout. The console gateway sends exactly this to /api/v1/query_range and streams the answer back.
 */
export const QueryPlan = z.object({
  query: z.string(),
  start: z.number(),
  end: z.number(),
  step: z.number().positive(),
  extra_filters: z.array(z.string().min(3)).length(1),
  timeout_ms: z.number().int().positive(),
});
export type QueryPlan = z.infer<typeof QueryPlan>;

const HOST_ERRORS = ['forbidden', 'not_found', 'bad_request', 'unavailable', 'bad_gateway', 'timeout'] as const;
const ByHost = z.object({ id: Id });

export const fleetMetricsSubjects = subjects({
  'svc.fleet.metrics.names': {
    retry: 'safe',
    summary: 'Distinct metric names a host reported in the last 31 days (metrics:read).',
    request: ByHost,
    reply: z.array(z.string()),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.metrics.series': {
    retry: 'safe',
    summary:
      "Distinct labels_key strings of a host's metric in the last 31 days, the empty string included (metrics:read).",
    request: ByHost.extend({ metric: MetricName }),
    reply: z.array(z.string()),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.metrics.points': {
    retry: 'safe',
    summary:
      'One series of a host as bucketed data points: 1-minute buckets up to 6 hours, hourly beyond (metrics:read).',
    request: ByHost.extend({ metric: MetricName, ...MetricPointsQuery.shape }),
    reply: z.array(MetricPoint),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.metrics.latest': {
    retry: 'safe',
    summary:
      "The newest value (last 60 minutes) of each named metric's unlabelled series on each host the caller reads (metrics:read); other hosts answer nothing.",
    request: z.object({
      host_ids: z.array(Id).min(1).max(LATEST_LIMITS.hosts),
      metrics: z.array(MetricName).min(1).max(LATEST_LIMITS.metrics),
    }),
    reply: z.array(LatestValue),
    errors: ['bad_request', 'unavailable', 'bad_gateway', 'timeout'],
  },
  'svc.fleet.metrics.process': {
    retry: 'safe',
    summary: 'CPU, memory and thread history of one process of a host, bucketed (metrics:read and processes:read).',
    request: ByHost.extend({ pid: Pid, ...ProcessMetricsQuery.shape }),
    reply: ProcessMetrics,
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.metrics.container': {
    retry: 'safe',
    summary: 'Gauges and per-second I/O rates of one container of a host, bucketed (metrics:read).',
    request: ByHost.extend({ container_id: ContainerId, ...TimeRangeQuery.shape }),
    reply: ContainerMetrics,
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.metrics.query': {
    retry: 'safe',
    summary:
      'Checks a PromQL range query (metrics:read on the named host and/or environment) and answers the confined VictoriaMetrics request to run: the tenant selector is the service’s, never the caller’s.',
    request: z.object(MetricsQueryFields),
    reply: QueryPlan,
    errors: ['bad_request', 'forbidden', 'not_found'],
  },
});
