import { z } from 'zod';
import { subjects } from '../subject.ts';

/** Clients (console-operations.md, "Clients and environments"): the tenants every grant, environment and host hangs on. */

/** Lower-case letters, digits and hyphens; 1 to 63 characters; starts and ends with a letter or digit. */
export const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const Slug = z.string().regex(SLUG, 'must be 1-63 lower-case letters, digits or hyphens, starting and ending with a letter or digit');

export const Client = z.object({
  id: z.uuid(),
  name: z.string(),
  slug: z.string(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type Client = z.infer<typeof Client>;

const ClientName = z.string().trim().min(1, 'must not be empty').max(200);

export const ClientListQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
  sort: z.enum(['name', 'slug', 'created_at', 'updated_at']).default('name'),
  order: z.enum(['asc', 'desc']).default('asc'),
});

export const CreateClientBody = z.object({ name: ClientName, slug: Slug });
export const UpdateClientBody = z.object({ name: ClientName });

const ById = z.object({ id: z.uuid() });

export const fleetSubjects = subjects({
  'svc.fleet.clients.list': {
    retry: 'safe',
    summary: 'Clients the caller may read (clients:read), paginated and sorted.',
    request: ClientListQuery,
    reply: z.object({ items: z.array(Client), total: z.number().int().nonnegative(), page: z.number().int().min(1), per_page: z.number().int().min(1) }),
    errors: ['forbidden'],
  },
  'svc.fleet.clients.get': { retry: 'safe', summary: 'One client (clients:read on it; 404 when out of scope).', request: ById, reply: Client, errors: ['forbidden', 'not_found'] },
  'svc.fleet.clients.create': { summary: 'Creates a client (clients:write).', request: CreateClientBody, reply: Client, errors: ['forbidden', 'conflict'] },
  'svc.fleet.clients.update': {
    summary: 'Renames a client; the slug never changes (clients:write on it).',
    request: ById.extend({ name: ClientName }),
    reply: Client,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.clients.delete': {
    summary: 'Deletes a client with its grants; affected users lose that access at once (clients:delete on it).',
    request: ById,
    reply: z.object({}),
    errors: ['forbidden', 'not_found'],
  },
});
