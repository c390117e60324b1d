import { z } from 'zod';
import { ErrorCode } from '../../contracts/errors.ts';
import { subjects } from '../../contracts/subject.ts';

/** A small catalogue of subjects that exist only in tests of the runtime and gateway plumbing. */
export const testCatalogue = subjects({
  'svc.rtest.echo': {
    summary: 'echo',
    request: z.object({ name: z.string().min(1), times: z.number().int().min(1).max(3) }),
    reply: z.object({ greeting: z.string(), instance: z.string() }),
    errors: [],
  },
  'svc.rtest.sleep': {
    summary: 'sleep',
    request: z.object({ ms: z.number().int().min(0) }),
    reply: z.object({ slept: z.number() }),
    errors: [],
  },
  'svc.rtest.fail': {
    summary: 'fail',
    request: z.object({ code: ErrorCode }),
    reply: z.object({}),
    errors: ErrorCode.options,
  },
  'svc.rtest.crash': { summary: 'crash', request: z.object({}), reply: z.object({}), errors: ['internal_error'] },
  'svc.rtest.badreply': {
    summary: 'bad reply',
    request: z.object({}),
    reply: z.object({ must: z.string() }),
    errors: ['internal_error'],
  },
  'svc.rtest.page': {
    summary: 'a page of numbers',
    request: z.object({ page: z.number().int(), per_page: z.number().int() }),
    reply: z.object({
      items: z.array(z.object({ n: z.number() })),
      total: z.number().int(),
      page: z.number().int(),
      per_page: z.number().int(),
    }),
    errors: [],
  },
  'svc.rtest.unserved': {
    summary: 'nobody serves this',
    request: z.object({}),
    reply: z.object({}),
    errors: ['unavailable'],
  },
  'svc.rtest.scope': {
    summary: 'what the actor saw: its trace, deadline and request id',
    request: z.object({}),
    reply: z.object({ traceparent: z.string(), deadline: z.number(), request_id: z.string() }),
    errors: [],
  },
  'svc.rtest.nested': {
    summary: 'calls svc.rtest.scope and answers both scopes',
    request: z.object({}),
    reply: z.object({
      outer: z.object({ traceparent: z.string(), deadline: z.number(), request_id: z.string() }),
      inner: z.object({ traceparent: z.string(), deadline: z.number(), request_id: z.string() }),
    }),
    errors: [],
  },
  'svc.rtest.storedown': {
    summary: 'a backing store refuses connections',
    request: z.object({}),
    reply: z.object({}),
    errors: ['unavailable'],
  },
  'svc.rtest.read': {
    summary: 'a read, safe to repeat: answers which instance served it after `ms`',
    retry: 'safe',
    request: z.object({ ms: z.number().int().min(0) }),
    reply: z.object({ instance: z.string() }),
    errors: [],
  },
  'svc.rtest.extra': {
    summary: 'a reply with a key its schema does not have',
    request: z.object({}),
    reply: z.object({ kept: z.string() }),
    errors: ['internal_error'],
  },
  'svc.rtest2.extra': {
    summary: 'the same, served without reply checks',
    request: z.object({}),
    reply: z.object({ kept: z.string() }),
    errors: [],
  },
  'svc.rtest.bigint': {
    summary: 'a reply zod accepts and JSON cannot carry',
    request: z.object({}),
    reply: z.object({ n: z.bigint() }),
    errors: ['internal_error'],
  },
});
export type TestCat = typeof testCatalogue;
