import { z } from 'zod';
import type { ErrorCode } from '../../contracts/errors.ts';
import type { AuthMode } from './auth.ts';
import { statusOf, wireCode, type ApiErrorCode, type ServiceStyle } from './errors.ts';

/**
 * The error envelope, one component (`#/components/schemas/Error`) every error response refers to; `shapeDocument`
 * narrows its `code` to the service's spelling.
 */
export const ErrorEnvelope = z
  .object({ error: z.object({ code: z.string(), message: z.string(), request_id: z.string() }) })
  .meta({ id: 'Error', description: 'The error envelope of every answer ≥ 400.' });

/** `svc.fleet.clients.list` → `fleet_clients_list`: stable as long as the subject is, and readable in a generated client. */
export const operationIdOf = (subject: string): string => subject.replace(/^svc\./, '').replace(/[^A-Za-z0-9]+/g, '_');

/** What a route is, as far as its possible errors go. */
export interface ErrorSources {
  /** The subject's own domain errors (the catalogue's `errors`); none for a route that calls nothing. */
  errors: readonly ErrorCode[];
  auth: AuthMode;
  /** Counted against a rate limit. */
  limited: boolean;
  hasBody: boolean;
  /** Takes an `Idempotency-Key`. */
  idempotent: boolean;
}

/**
 * The error responses a route can give, each with the envelope: the subject's domain errors and what the gateway
 * itself answers in front of it (validation, authentication, rate limit, body size, idempotency, deadline).
 */
export function errorResponses(route: ErrorSources): Record<number, typeof ErrorEnvelope> {
  const codes = new Set<ApiErrorCode>([...route.errors, 'internal_error', 'unavailable', 'timeout']);
  // A malformed URL or JSON body is a 400 on every route, validated or not.
  codes.add('bad_request');
  if (route.auth !== 'public') for (const c of ['unauthorized', 'forbidden'] as const) codes.add(c);
  if (route.limited) codes.add('too_many_requests');
  if (route.hasBody) codes.add('request_too_large');
  if (route.idempotent) for (const c of ['conflict', 'unprocessable_entity'] as const) codes.add(c);
  const out: Record<number, typeof ErrorEnvelope> = {};
  for (const code of [...codes].sort((a, b) => statusOf[a] - statusOf[b])) out[statusOf[code]] = ErrorEnvelope;
  return out;
}

/** Response descriptions by status, instead of the generic one the generator writes. */
const STATUS_TEXT: Record<number, string> = {
  400: 'The request is malformed or fails validation.',
  401: 'Missing, invalid or expired credentials.',
  403: 'The caller may not do this (or must enrol MFA first).',
  404: 'No such resource, or not visible to the caller.',
  409: 'Conflicts with the current state (or the same Idempotency-Key is still running).',
  413: 'The request body is too large.',
  422: 'The Idempotency-Key was used for a different request.',
  429: 'Rate limited; see Retry-After.',
  500: 'Internal error.',
  502: 'An upstream system failed.',
  503: 'Unavailable (not configured, a dependency is down, or shutting down); retry later.',
  504: 'The request did not finish before its deadline.',
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * OpenAPI 3.0 allows `nullable` only beside a `type`: a nullable union (`anyOf` of types) carries it on each branch
 * instead, and a one-branch `anyOf` is that branch. Applied to every schema object, depth first.
 */
function fixSchema(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(fixSchema);
  if (!isObject(node)) return;
  for (const value of Object.values(node)) fixSchema(value);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = node[key];
    if (!Array.isArray(branches)) continue;
    if (branches.length === 1 && isObject(branches[0]) && !('$ref' in branches[0])) {
      delete node[key];
      Object.assign(node, branches[0]);
    } else if (node.nullable === true && node.type === undefined) {
      delete node.nullable;
      for (const branch of branches) if (isObject(branch) && branch.type !== undefined) branch.nullable = true;
      // A branch without a type (a reference) cannot say it; one more branch accepts the null.
      if (branches.some((b) => !isObject(b) || b.type === undefined))
        branches.push({ type: 'string', nullable: true, enum: [null] });
    }
  }
  // Any value already includes null.
  if (
    node.nullable === true &&
    node.type === undefined &&
    node.anyOf === undefined &&
    node.oneOf === undefined &&
    node.allOf === undefined
  )
    delete node.nullable;
}

/** Every `$ref` target under `node`. */
function refsIn(node: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => refsIn(n, into));
  else if (isObject(node)) {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') into.add(v);
      else refsIn(v, into);
    }
  }
  return into;
}

/** Schema components nothing refers to (the generator makes an input and an output variant of each named schema). */
function dropUnreferenced(doc: Json, schemas: Json): void {
  const prefix = '#/components/schemas/';
  const reached = new Set<string>();
  let frontier = [...refsIn(doc.paths, new Set())];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const ref of frontier) {
      const name = ref.startsWith(prefix) ? ref.slice(prefix.length) : undefined;
      if (name === undefined || reached.has(name)) continue;
      reached.add(name);
      next.push(...refsIn(schemas[name], new Set()));
    }
    frontier = next;
  }
  for (const name of Object.keys(schemas)) if (!reached.has(name)) delete schemas[name];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * The finishing touches of a gateway's document: `servers` from its public URL, the error envelope's codes in the
 * service's spelling, error response descriptions, OpenAPI 3.0-valid nullables, and only the security schemes used.
 */
export function shapeDocument(doc: Json, opts: { style: ServiceStyle; publicUrl: string }): Json {
  doc.servers = [{ url: opts.publicUrl.replace(/(.)\/+$/, '$1') }];
  const components = isObject(doc.components) ? doc.components : {};
  const schemas = isObject(components.schemas) ? components.schemas : {};
  const codes = [...new Set((Object.keys(statusOf) as ApiErrorCode[]).map((c) => wireCode(opts.style, c)))];
  for (const name of ['Error', 'ErrorInput']) {
    const error = (schemas[name] as { properties?: { error?: { properties?: { code?: Json } } } } | undefined)
      ?.properties?.error?.properties?.code;
    if (error) error.enum = codes;
  }
  const used = new Set<string>();
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      for (const requirement of Array.isArray(op.security) ? op.security : [])
        if (isObject(requirement)) Object.keys(requirement).forEach((k) => used.add(k));
      const responses = isObject(op.responses) ? op.responses : {};
      for (const [status, response] of Object.entries(responses)) {
        const text = STATUS_TEXT[Number(status)];
        if (!isObject(response)) continue;
        if (text && Number(status) >= 400) response.description = text;
        else if (response.description === 'Default Response')
          response.description = status === '204' ? 'No content.' : 'Success.';
      }
    }
  }
  // Any JSON value is the empty schema: its recursive form (arrays of itself) is a type TypeScript generators cannot
  // write (openapi-typescript's output fails with TS2502).
  for (const name of ['JsonValue', 'JsonValueInput'])
    if (schemas[name]) schemas[name] = { description: 'Any JSON value.' };
  fixSchema(paths);
  fixSchema(schemas);
  dropUnreferenced(doc, schemas);
  if (isObject(components.securitySchemes)) {
    for (const name of Object.keys(components.securitySchemes))
      if (!used.has(name)) delete components.securitySchemes[name];
  }
  return doc;
}
