import { z } from 'zod';
import {
  SavedSearchBody,
  SavedSearchListQuery,
  UpdateSavedSearchBody,
} from '../../../contracts/domains/fleet-search.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const ById = z.object({ id: z.uuid() });

/** Saved searches (docs/api/search.md#saved-searches); visibility and ownership are checked by the fleet actors. */
export function registerSavedSearchRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['search'] });
  route({
    method: 'GET',
    url: '/api/v1/saved-searches',
    subject: 'svc.fleet.saved_searches.list',
    query: SavedSearchListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'POST',
    url: '/api/v1/saved-searches',
    subject: 'svc.fleet.saved_searches.create',
    body: SavedSearchBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'GET',
    url: '/api/v1/saved-searches/:id',
    subject: 'svc.fleet.saved_searches.get',
    params: ById,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/saved-searches/:id',
    subject: 'svc.fleet.saved_searches.update',
    params: ById,
    body: UpdateSavedSearchBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/saved-searches/:id',
    subject: 'svc.fleet.saved_searches.delete',
    params: ById,
    input: ({ params }) => params,
    status: 204,
  });
}
