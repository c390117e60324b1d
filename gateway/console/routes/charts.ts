import { z } from 'zod';
import {
  CreateNoteBody,
  MarkerQuery,
  MarkerType,
  NoteListQuery,
  TimelineQuery,
  UpdateNoteBody,
} from '../../../contracts/domains/events-charts.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const IdParams = z.object({ id: z.uuid() });

/** `types=alerts,deploys` (comma-separated) into the subject's list; unknown words are 400. */
const MarkerQueryString = z
  .object({ types: z.string().max(100).optional() })
  .passthrough()
  .transform(({ types, ...rest }) => ({
    ...rest,
    ...(types === undefined
      ? {}
      : {
          types: [
            ...new Set(
              types
                .split(',')
                .map((t) => t.trim())
                .filter((t) => t.length > 0),
            ),
          ],
        }),
  }))
  .pipe(
    MarkerQuery.and(z.object({ types: z.array(MarkerType).min(1, 'name at least one of alerts, deploys').optional() })),
  );

/** The event timeline, notes on charts and chart markers (docs/api/events.md). */
export function registerChartRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['events'] });
  route({
    method: 'GET',
    url: '/api/v1/events/timeline',
    subject: 'svc.events.timeline',
    query: TimelineQuery,
    input: ({ query }) => query,
  });
  route({
    method: 'GET',
    url: '/api/v1/chart-markers',
    subject: 'svc.events.chart_markers',
    query: MarkerQueryString,
    input: ({ query }) => query,
  });

  const notes = routeGroup(app, deps, { auth: 'user', tags: ['annotations'] });
  notes({
    method: 'GET',
    url: '/api/v1/annotations',
    subject: 'svc.events.annotations.list',
    auth: 'authenticated',
    query: NoteListQuery,
    input: ({ query }) => query,
  });
  notes({
    method: 'POST',
    url: '/api/v1/annotations',
    subject: 'svc.events.annotations.create',
    body: CreateNoteBody,
    input: ({ body }) => body,
    status: 201,
  });
  notes({
    method: 'PUT',
    url: '/api/v1/annotations/:id',
    subject: 'svc.events.annotations.update',
    params: IdParams,
    body: UpdateNoteBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  notes({
    method: 'DELETE',
    url: '/api/v1/annotations/:id',
    subject: 'svc.events.annotations.delete',
    params: IdParams,
    input: ({ params }) => params,
    status: 204,
  });
}
