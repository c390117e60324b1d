import { stringify } from 'csv-stringify/sync';
import { z } from 'zod';
import {
  AggregateRequest,
  SEARCH_CSV_MAX_ROWS,
  ValidateBody,
  SearchHit,
} from '../../../contracts/domains/fleet-search.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const JSON_MAX_PER_PAGE = 100;
const Q = z.string({ error: 'is required (a PQL query)' });

/** JSON pages take at most 100 hosts, like every list; a CSV export up to 1,000 (default: all of them, up to that). */
const SearchQuery = z
  .object({
    q: Q,
    page: z.coerce.number().int().min(1).default(1),
    per_page: z.coerce.number().int().min(1).max(SEARCH_CSV_MAX_ROWS).optional(),
    format: z.enum(['json', 'csv']).default('json'),
  })
  .superRefine((v, ctx) => {
    if (v.format === 'json' && v.per_page !== undefined && v.per_page > JSON_MAX_PER_PAGE) {
      ctx.addIssue({
        code: 'too_big',
        origin: 'number',
        maximum: JSON_MAX_PER_PAGE,
        inclusive: true,
        path: ['per_page'],
        message: `Too big: expected number to be <=${JSON_MAX_PER_PAGE}`,
      });
    }
  });

export const CSV_COLUMNS = ['id', 'hostname', 'ip_address', 'os', 'arch', 'agent_status', 'tags'] as const;

/**
 * Search hits as CSV (RFC 4180, a header row, tags as a JSON object). Cells that a spreadsheet would run as a formula
 * (starting with =, +, -, @, tab or carriage return) get a leading `'`: csv-stringify's `escape_formulas`.
 */
export function hostsCsv(items: readonly SearchHit[]): string {
  return stringify(
    items.map((h) => [h.id, h.hostname, h.ip_address, h.os, h.arch, h.agent_status, JSON.stringify(h.tags)]),
    { header: true, columns: [...CSV_COLUMNS], escape_formulas: true, record_delimiter: 'windows' },
  );
}

/** Host search (docs/api/search.md#routes); permissions and tenant scope are the fleet actors'. */
export function registerSearchRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['search'] });
  route({
    method: 'GET',
    url: '/api/v1/search',
    subject: 'svc.fleet.search.hosts',
    query: SearchQuery,
    input: ({ query }) => ({
      q: query.q,
      page: query.page,
      per_page: query.per_page ?? (query.format === 'csv' ? SEARCH_CSV_MAX_ROWS : 20),
    }),
    answer: z
      .object({
        data: z.array(SearchHit),
        meta: z.object({ total: z.number().int(), page: z.number().int(), per_page: z.number().int() }),
      })
      .describe('The list envelope; with format=csv, the same hosts as text/csv (a header row, tags as JSON).'),
    send: (data, reply, req) => {
      if ((req.query as z.output<typeof SearchQuery>).format !== 'csv')
        return reply.send({ data: data.items, meta: { total: data.total, page: data.page, per_page: data.per_page } });
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="hosts.csv"')
        .header('x-total-count', String(data.total))
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'no-store')
        .send(hostsCsv(data.items));
    },
  });
  route({
    method: 'GET',
    url: '/api/v1/search/count',
    subject: 'svc.fleet.search.count',
    query: z.object({ q: Q }),
    input: ({ query }) => query,
  });
  route({ method: 'GET', url: '/api/v1/search/fields', subject: 'svc.fleet.search.fields', input: () => ({}) });
  route({
    method: 'POST',
    url: '/api/v1/search/validate',
    subject: 'svc.fleet.search.validate',
    body: ValidateBody,
    input: ({ body }) => body,
  });
  route({
    method: 'GET',
    url: '/api/v1/search/aggregate',
    subject: 'svc.fleet.search.aggregate',
    query: AggregateRequest.extend({
      q: Q,
      group_by: z.string({ error: 'is required (a host field such as host.os)' }).max(200),
    }),
    input: ({ query }) => query,
  });
}
