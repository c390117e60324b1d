import { beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocuments, type OpenApiDocuments } from '../../scripts/openapi.ts';
import { testConfig } from '../support/env.ts';

/**
 * The documents both gateways serve at /swagger/json, built offline from the routes' schemas (nothing behind the
 * gateways is ever called): what they say, read directly. (Through the real tools, Redocly CLI, openapi-typescript and
 * tsc: openapi.test.ts.)
 */
type Json = Record<string, unknown>;
type Operation = {
  operationId?: string;
  security?: Record<string, string[]>[];
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
};
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

const operations = (doc: Json): [string, Operation][] =>
  Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m): [string, Operation] => [`${m.toUpperCase()} ${path}`, item[m]!]),
  );
const op = (doc: Json, method: string, path: string): Operation =>
  (doc.paths as Record<string, Record<string, Operation>>)[path]![method]!;

let docs: OpenApiDocuments;

beforeAll(async () => {
  docs = await buildOpenApiDocuments(
    // SSO on, so its routes are in the document too.
    testConfig({
      SVC_SSO_CLIENT_ID: 'console',
      SVC_SSO_CLIENT_SECRET: 'secret',
      SVC_BACKEND_URL: 'https://console.example.net/',
      SVC_INVOICING_PUBLIC_URL: 'https://billing.example.net',
    }),
  );
}, 60_000);

describe('the OpenAPI documents', () => {
  it('every $ref resolves within its document', () => {
    for (const doc of Object.values(docs)) {
      const refs = new Set<string>();
      const walk = (n: unknown): void => {
        if (Array.isArray(n)) n.forEach(walk);
        else if (n !== null && typeof n === 'object')
          for (const [k, v] of Object.entries(n))
            if (k === '$ref') refs.add(String(v));
            else walk(v);
      };
      walk(doc);
      expect(refs.size).toBeGreaterThan(0);
      for (const ref of refs) {
        const target = ref
          .replace(/^#\//, '')
          .split('/')
          .reduce<unknown>(
            (at, part) => (at as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')],
            doc,
          );
        expect(target, ref).toBeTypeOf('object');
      }
    }
    // The tracker's free-form fields (a recursive JSON value) refer to a defined component.
    const body = op(docs.console, 'post', '/api/v1/service-desk/tickets') as unknown as {
      requestBody: { content: Record<string, { schema: { properties: Record<string, Json> } }> };
    };
    expect(
      body.requestBody.content['application/json']!.schema.properties.request_field_values!.additionalProperties,
    ).toEqual({ $ref: '#/components/schemas/JsonValueInput' });
  });

  it('names every operation by its subject, uniquely', () => {
    for (const doc of Object.values(docs)) {
      const ids = operations(doc).map(([name, o]) => o.operationId ?? `missing on ${name}`);
      expect(ids.filter((id) => !/^[a-z][a-z0-9_]*$/.test(id))).toEqual([]);
      expect(new Set(ids).size).toBe(ids.length);
    }
    expect(op(docs.console, 'get', '/api/v1/clients').operationId).toBe('fleet_clients_list');
    expect(op(docs.console, 'post', '/api/v1/auth/login').operationId).toBe('identity_auth_login');
    expect(op(docs.invoicing, 'post', '/api/v1/invoices/{id}/approve').operationId).toBe('invoice_review_approve');
  });

  it('declares the security schemes, and says which routes need none', () => {
    const schemes = (docs.console.components as { securitySchemes: Json }).securitySchemes;
    expect(schemes).toEqual({
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    });
    for (const doc of Object.values(docs))
      for (const [name, o] of operations(doc)) expect(o.security, name).toBeDefined();
    for (const path of [
      '/api/v1/auth/login',
      '/api/v1/auth/refresh',
      '/api/v1/auth/sso/exchange',
      '/api/v1/agents/enroll',
      '/api/v1/webhooks/{source}/{token}',
    ]) {
      expect(op(docs.console, 'post', path).security, path).toEqual([]);
    }
    expect(op(docs.console, 'get', '/api/v1/clients').security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    expect(op(docs.console, 'get', '/api/v1/auth/me').security).toEqual([{ bearer: [] }]);
  });

  it('documents the error envelope for the errors each route can give', () => {
    const errorSchema = (o: Operation, status: string): Json | undefined =>
      o.responses[status]?.content?.['application/json']?.schema;
    const envelope = { $ref: '#/components/schemas/Error' };
    for (const doc of Object.values(docs)) {
      for (const [name, o] of operations(doc)) {
        for (const status of ['400', '500', '503', '504'])
          expect(errorSchema(o, status), `${name} ${status}`).toEqual(envelope);
      }
    }
    const create = op(docs.console, 'post', '/api/v1/clients');
    // Authentication, rate limit, body size, Idempotency-Key, and the subject's own conflict.
    for (const status of ['401', '403', '409', '413', '422', '429'])
      expect(errorSchema(create, status), status).toEqual(envelope);
    expect(errorSchema(op(docs.console, 'get', '/api/v1/clients/{id}'), '404')).toEqual(envelope);
    // A public route answers no 401/403 of the gateway's own.
    expect(op(docs.console, 'post', '/api/v1/auth/forgot-password').responses['403']).toBeUndefined();
    const codeOf = (doc: Json): { enum: string[] } =>
      (
        doc.components as {
          schemas: Record<string, { properties: { error: { properties: { code: { enum: string[] } } } } }>;
        }
      ).schemas.Error!.properties.error.properties.code;
    expect(codeOf(docs.console).enum).toEqual(
      expect.arrayContaining(['bad_request', 'not_found', 'service_unavailable']),
    );
    expect(codeOf(docs.invoicing).enum).toEqual(
      expect.arrayContaining(['VALIDATION_ERROR', 'NOT_FOUND', 'CONFLICT', 'INTERNAL_ERROR']),
    );
  });

  it('names the configured public URL as its server', () => {
    expect(docs.console.servers).toEqual([{ url: 'https://console.example.net' }]);
    expect(docs.invoicing.servers).toEqual([{ url: 'https://billing.example.net' }]);
  });
});
