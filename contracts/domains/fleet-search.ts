import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { subjects } from '../subject.ts';
import { Paged, Paging } from '../paging.ts';

/** Host search and saved searches (docs/api/search.md, the language in #the-language-ebnf). */

/** A PQL query as it crosses the wire; its syntax is checked by the fleet actors (400 with the position). */
const Pql = z.string().max(100_000);
export const SEARCH_CSV_MAX_ROWS = 1000;

export const SearchHit = z.object({
  id: z.uuid(),
  hostname: z.string(),
  ip_address: z.string(),
  os: z.string(),
  arch: z.string(),
  agent_status: z.enum(['online', 'offline']),
  tags: z.record(z.string(), z.string()),
});
export type SearchHit = z.infer<typeof SearchHit>;

export const SearchRequest = z.object({
  q: Pql,
  page: z.coerce.number().int().min(1).default(1),
  /** Up to 100 for JSON pages (the gateway enforces it), up to SEARCH_CSV_MAX_ROWS for a CSV export. */
  per_page: z.coerce.number().int().min(1).max(SEARCH_CSV_MAX_ROWS).default(20),
});

export const FieldInfo = z.object({
  prefix: z.enum(['host', 'label', 'tag', 'service', 'container', 'package']),
  name: z.string(),
  type: z.enum(['string', 'number', 'version', 'boolean', 'datetime']),
  operators: z.array(z.string()),
});

export const AggregateRequest = z.object({
  q: Pql,
  /** A host field: `host.os` (or `os`). */
  group_by: z.string().max(200),
  /** Groups returned, the largest first (default 100, at most 1,000). */
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export const AggregateBucket = z.object({
  value: z.union([z.string(), z.number(), z.null()]),
  count: z.number().int().nonnegative(),
});

export const ValidateBody = z.object({ query: Pql });
export const ValidateReply = z.object({ valid: z.boolean(), error: z.string() });

// ---------------------------------------------------------------------------------------------------------------
// Saved searches

export const SavedSearch = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  name: z.string(),
  query: z.string(),
  description: z.string(),
  is_shared: z.boolean(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type SavedSearch = z.infer<typeof SavedSearch>;

export const SavedSearchBody = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200),
  /** Checked with the PQL parser before saving (400 with the same text as /search/validate). */
  query: Pql,
  description: z.string().max(2000).default(''),
  is_shared: z.boolean().default(false),
});

/** PUT "same as create"; the owner is fixed: echoing it is fine, another is 400 (contracts/immutable.ts). */
export const SAVED_SEARCH_IMMUTABLE = ['user_id'] as const;
export const UpdateSavedSearchBody = SavedSearchBody.extend(immutableFields(SavedSearch, SAVED_SEARCH_IMMUTABLE));

export const SavedSearchListQuery = z.object(Paging);

const ById = z.object({ id: z.uuid() });
const Count = z.number().int().nonnegative();

export const fleetSearchSubjects = subjects({
  'svc.fleet.search.hosts': {
    retry: 'safe',
    summary:
      'Hosts matching a PQL query, limited to clients where the caller holds hosts:read and search:read; ordered by hostname.',
    request: SearchRequest,
    reply: Paged(SearchHit),
    errors: ['bad_request', 'forbidden', 'timeout'],
  },
  'svc.fleet.search.count': {
    retry: 'safe',
    summary: 'How many hosts match a PQL query (same scope as search).',
    request: z.object({ q: Pql }),
    reply: z.object({ count: Count }),
    errors: ['bad_request', 'forbidden', 'timeout'],
  },
  'svc.fleet.search.fields': {
    retry: 'safe',
    summary: 'The PQL fields: prefix, name (label and tag fields are named *), type and operators.',
    request: z.object({}),
    reply: z.array(FieldInfo),
    errors: ['forbidden'],
  },
  'svc.fleet.search.validate': {
    retry: 'safe',
    summary: 'Whether a PQL query parses; the error names the position and what was expected.',
    request: ValidateBody,
    reply: ValidateReply,
    errors: ['forbidden'],
  },
  'svc.fleet.search.aggregate': {
    retry: 'safe',
    summary: 'Matching hosts counted per value of a host field, the largest groups first.',
    request: AggregateRequest,
    reply: z.array(AggregateBucket),
    errors: ['bad_request', 'forbidden', 'timeout'],
  },
  'svc.fleet.saved_searches.list': {
    retry: 'safe',
    summary: "The caller's saved searches and every shared one, by name.",
    request: SavedSearchListQuery,
    reply: Paged(SavedSearch),
    errors: ['forbidden'],
  },
  'svc.fleet.saved_searches.get': {
    retry: 'safe',
    summary:
      'One saved search: shared ones to anyone who may search, private ones to their owner and super admins (404 otherwise).',
    request: ById,
    reply: SavedSearch,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.saved_searches.create': {
    summary: 'Saves a search for the signed-in user (search:write); the query must parse.',
    request: SavedSearchBody,
    reply: SavedSearch,
    errors: ['bad_request', 'forbidden'],
  },
  'svc.fleet.saved_searches.update': {
    summary:
      'Replaces a saved search (its owner or a super admin); its owner never changes: sent unchanged it is accepted, another is 400.',
    request: ById.extend(UpdateSavedSearchBody.shape),
    reply: SavedSearch,
    errors: ['bad_request', 'forbidden', 'not_found'],
  },
  'svc.fleet.saved_searches.delete': {
    summary: 'Deletes a saved search (its owner or a super admin).',
    request: ById,
    reply: z.object({}),
    errors: ['forbidden', 'not_found'],
  },
});
