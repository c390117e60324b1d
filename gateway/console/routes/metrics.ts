import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Tsdb, TsdbError, tsdbFailure, type TsdbAnswer, type TsdbBases } from '../../../actors/fleet/mod.ts';
import {
  ContainerId,
  LatestMetricsQuery,
  MetricName,
  MetricPointsQuery,
  MetricsQueryBody,
  Pid,
  ProcessMetricsQuery,
  TimeRangeQuery,
  type QueryPlan,
} from '../../../contracts/domains/fleet-metrics.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';
import { deadlineOf } from '../../shared/request-context.ts';

const HostParams = z.object({ id: z.uuid() });
const MetricParams = HostParams.extend({ metricName: MetricName });

/** Host, process and container metrics and the tenant PromQL route (docs/api/metrics.md). */
export function registerMetricsRoutes(app: GatewayApp, deps: GatewayDeps, tsdbBases: TsdbBases): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['metrics'] });
  route({
    method: 'GET',
    url: '/api/v1/hosts/metrics/latest',
    subject: 'svc.fleet.metrics.latest',
    query: LatestMetricsQuery,
    input: ({ query }) => query,
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/metrics',
    subject: 'svc.fleet.metrics.names',
    params: HostParams,
    input: ({ params }) => params,
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/metrics/:metricName',
    subject: 'svc.fleet.metrics.points',
    params: MetricParams,
    query: MetricPointsQuery,
    input: ({ params, query }) => ({ id: params.id, metric: params.metricName, ...query }),
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/metrics/:metricName/series',
    subject: 'svc.fleet.metrics.series',
    params: MetricParams,
    input: ({ params }) => ({ id: params.id, metric: params.metricName }),
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/processes/:pid/metrics',
    subject: 'svc.fleet.metrics.process',
    params: HostParams.extend({ pid: Pid }),
    query: ProcessMetricsQuery,
    input: ({ params, query }) => ({ id: params.id, pid: params.pid, ...query }),
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/containers/:containerID/metrics',
    subject: 'svc.fleet.metrics.container',
    params: HostParams.extend({ containerID: ContainerId }),
    query: TimeRangeQuery,
    input: ({ params, query }) => ({ id: params.id, container_id: params.containerID, ...query }),
  });

  // The tenant PromQL route only reads: its query_range goes to the read base (a cluster's vmselect).
  const tsdb = new Tsdb(tsdbBases);
  route({
    method: 'POST',
    url: '/api/v1/metrics/query',
    subject: 'svc.fleet.metrics.query',
    summary:
      "Runs a PromQL range query over the named host and/or environment (metrics:read) and streams VictoriaMetrics' range-query JSON.",
    // Nothing in the URL either: no caller-supplied extra_filters[] / extra_label can ride along.
    query: z.strictObject({}, { error: () => 'this route takes no query parameters' }),
    body: MetricsQueryBody,
    input: ({ body }) => body,
    send: (plan, reply, req) => streamQuery(tsdb, plan, reply, req, deps.requestTimeoutMs),
  });
}

/** A tenant selector as the fleet domain builds it: the client first, then environment and/or host, all uuids. */
const TENANT_FILTER = /^\{client_id="[0-9a-f-]{36}"(,environment_id="[0-9a-f-]{36}")?(,host_id="[0-9a-f-]{36}")?\}$/;

/**
 * Runs the fleet domain's confined request against VictoriaMetrics and pipes its answer to the client as it comes.
 * Only the plan's fields are sent (the caller's body went to the domain, never here). The store's own timeout and
 * this request are both bounded by what is left of the request's deadline.
 */
async function streamQuery(
  tsdb: Tsdb,
  plan: QueryPlan,
  reply: FastifyReply,
  req: FastifyRequest,
  requestTimeoutMs: number,
): Promise<FastifyReply> {
  // Defence in depth: a plan without its tenant selector is a bug upstream of here, and is never run.
  if (plan.extra_filters.length !== 1 || !TENANT_FILTER.test(plan.extra_filters[0]!))
    throw new DomainError('internal_error', 'query plan without a tenant filter');
  const left = deadlineOf(req, requestTimeoutMs) - Date.now();
  if (left < 250) throw new DomainError('timeout', 'the request deadline passed before the query could run');
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  let answer: TsdbAnswer;
  try {
    answer = await tsdb.queryRangeRaw(
      {
        query: plan.query,
        start: plan.start,
        end: plan.end,
        step: plan.step,
        extraFilters: plan.extra_filters,
        timeout: `${Math.max(1, Math.min(plan.timeout_ms, left - 150))}ms`,
        nocache: true,
      },
      // The exchange, its answer's streaming included, ends with what is left of the request's deadline.
      { signal: gone.signal, timeoutMs: left - 50 },
    );
  } catch (err) {
    if (err instanceof TsdbError && err.status === 0 && /timed out after/.test(err.message)) {
      throw new DomainError(
        'timeout',
        'the query did not finish before the request deadline; narrow the range or the selectors',
      );
    }
    throw tsdbFailure(err, { callerQuery: true }) ?? err;
  }
  void reply.status(200).header('content-type', answer.contentType ?? 'application/json');
  return reply.send(answer.body);
}
