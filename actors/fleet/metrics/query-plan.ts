import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import { QUERY_LIMITS } from '../../../contracts/domains/fleet-metrics.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { loadEnvironment, loadHost } from '../scope.ts';
import { HOUR_MS, MAX_RANGE_MS, SIX_HOURS_MS } from './buckets.ts';
import { guardQuery, QueryRefused } from './promql-guard.ts';
import { selector, type Match } from './store-reads.ts';

/**
 * POST /metrics/query, the fleet domain's half: validates the range and step, judges the PromQL (promql-guard.ts),
 * authorizes the named host and/or environment (metrics:read on its client; 404 out of reach), and answers the
 * confined upstream request. The console gateway runs that request against VictoriaMetrics and streams the answer:
 * the tenant selector comes only from here, built from rows the caller was just authorized on.
 */

const UNITS_S: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800, y: 31_536_000 };

/** `60s`, `1m30s`, `500ms` or plain seconds, in seconds. */
export function stepSeconds(step: string): number {
  if (/^\d+(?:\.\d+)?$/.test(step)) return Number(step);
  let total = 0;
  for (const m of step.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/g)) total += Number(m[1]) * UNITS_S[m[2]!]!;
  return total;
}

export function metricsQueryHandlers(deps: {
  orm: MikroORM;
  queryTimeoutMs: number;
}): Handlers<SystemCatalogue, 'fleet'> {
  return {
    'svc.fleet.metrics.query': async ({ query, start, end, step, host_id, environment_id }, { ctx }) => {
      if (host_id === undefined && environment_id === undefined)
        throw new DomainError('bad_request', 'host_id or environment_id is required');
      const startMs = Date.parse(start);
      const endMs = Date.parse(end);
      if (startMs < 0) throw new DomainError('bad_request', 'start must not be before 1970-01-01T00:00:00Z');
      if (startMs > endMs) throw new DomainError('bad_request', 'start must not be after end');
      if (endMs - startMs > MAX_RANGE_MS)
        throw new DomainError(
          'bad_request',
          `the range from start to end may span at most ${QUERY_LIMITS.maxRangeDays} days`,
        );
      // Without a step: the charts' bucket rule (1 minute up to 6 hours, hourly beyond).
      const stepS = step !== undefined ? stepSeconds(step) : endMs - startMs <= SIX_HOURS_MS ? 60 : HOUR_MS / 1000;
      if (!(stepS > 0)) throw new DomainError('bad_request', 'step must be positive');
      const points = Math.floor((endMs - startMs) / 1000 / stepS) + 1;
      if (points > QUERY_LIMITS.maxPoints) {
        throw new DomainError(
          'bad_request',
          `start, end and step give ${points} points per series; at most ${QUERY_LIMITS.maxPoints} are allowed (use a step of at least ${Math.ceil((endMs - startMs) / 1000 / (QUERY_LIMITS.maxPoints - 1))}s)`,
        );
      }
      let canonical: string;
      try {
        canonical = guardQuery(query);
      } catch (err) {
        if (err instanceof QueryRefused) throw new DomainError('bad_request', err.message);
        throw err;
      }

      const em: EntityManager = deps.orm.em.fork();
      const host = host_id !== undefined ? await loadHost(em, ctx, host_id, 'metrics:read') : undefined;
      const env =
        environment_id !== undefined ? await loadEnvironment(em, ctx, environment_id, 'metrics:read') : undefined;
      if (host && env && host.client_id !== env.client_id)
        throw new DomainError('bad_request', 'host_id and environment_id belong to different clients');
      const clientId = host?.client_id ?? env!.client_id;
      const tenant: Match[] = [['client_id', '=', clientId]];
      if (env) tenant.push(['environment_id', '=', env.id]);
      if (host) tenant.push(['host_id', '=', host.id]);
      return {
        query: canonical,
        start: startMs / 1000,
        end: endMs / 1000,
        step: stepS,
        extra_filters: [selector(tenant)],
        timeout_ms: deps.queryTimeoutMs,
      };
    },
  };
}
