import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { rawRequest, type RawResponse } from './raw-http.ts';

/**
 * Every answer ≥ 400 of both gateways is the service's envelope, also when Node's HTTP parser or Fastify's router
 * answers before any route runs. Checked over a real socket: `inject` never goes through the HTTP parser.
 */
const log = createLogger('silent');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function build(style: 'console' | 'invoicing'): Promise<{ app: GatewayApp; port: number }> {
  const app = await createGatewayApp(
    {
      style,
      title: 't',
      version: '1',
      config: { SVC_CORS_ORIGINS: ['https://app.example.com'], SVC_ENABLE_DEBUG_ENDPOINTS: false },
      log,
    },
    (a) => {
      a.get('/api/v1/users/:id', async () => ({ data: { ok: true } }));
      a.post('/api/v1/users', async () => ({ data: { ok: true } }));
    },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as AddressInfo).port };
}

const get = (path: string, extra = ''): string =>
  `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}\r\n`;

interface Case {
  name: string;
  request: string;
  status: number;
  console: string;
  invoicing: string;
  /** The request id the client gave, echoed; otherwise a generated UUID. */
  id?: string;
}

const cases: Case[] = [
  {
    name: 'header over 16 KB',
    request: get('/api/v1/users/1', `X-Big: ${'a'.repeat(17 * 1024)}\r\n`),
    status: 431,
    console: 'request_header_fields_too_large',
    invoicing: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  },
  {
    name: 'URL over 16 KB',
    request: get(`/api/v1/users/1?q=${'a'.repeat(17 * 1024)}`),
    status: 431,
    console: 'request_header_fields_too_large',
    invoicing: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  },
  {
    name: 'malformed percent-encoding',
    request: get('/api/v1/users/%E0%A4%A', 'X-Request-Id: pct-1\r\n'),
    status: 400,
    console: 'bad_request',
    invoicing: 'VALIDATION_ERROR',
    id: 'pct-1',
  },
  {
    name: 'path parameter over 100 characters',
    request: get(`/api/v1/users/${'a'.repeat(101)}`, 'X-Request-Id: long-1\r\n'),
    status: 414,
    console: 'uri_too_long',
    invoicing: 'URI_TOO_LONG',
    id: 'long-1',
  },
  {
    name: 'unknown method',
    request: 'FUZZ /api/v1/users HTTP/1.1\r\nHost: x\r\n\r\n',
    status: 400,
    console: 'bad_request',
    invoicing: 'VALIDATION_ERROR',
  },
  {
    name: 'garbage request line',
    request: 'hello there\r\n\r\n',
    status: 400,
    console: 'bad_request',
    invoicing: 'VALIDATION_ERROR',
  },
  {
    name: 'invalid Content-Length',
    request: 'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
    status: 400,
    console: 'bad_request',
    invoicing: 'VALIDATION_ERROR',
  },
  {
    name: 'missing Host',
    request: 'GET /api/v1/users/1 HTTP/1.1\r\nConnection: close\r\n\r\n',
    status: 400,
    console: 'bad_request',
    invoicing: 'VALIDATION_ERROR',
  },
  {
    name: 'unsupported expectation',
    request:
      'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nExpect: 100-foo\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
    status: 417,
    console: 'expectation_failed',
    invoicing: 'EXPECTATION_FAILED',
  },
  {
    name: 'CONNECT',
    request: 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    status: 405,
    console: 'method_not_allowed',
    invoicing: 'METHOD_NOT_ALLOWED',
  },
  {
    name: 'unknown route',
    request: get('/api/v1/nope', 'X-Request-Id: nf-1\r\n'),
    status: 404,
    console: 'not_found',
    invoicing: 'NOT_FOUND',
    id: 'nf-1',
  },
  {
    name: 'known path, other method',
    request: 'DELETE /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 404,
    console: 'not_found',
    invoicing: 'NOT_FOUND',
  },
  {
    name: 'CORS preflight without a method',
    request:
      'OPTIONS /api/v1/users HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example.com\r\nConnection: close\r\n\r\n',
    status: 400,
    console: 'bad_request',
    invoicing: 'VALIDATION_ERROR',
  },
];

function expectEnvelope(res: RawResponse | undefined, c: Case, style: 'console' | 'invoicing'): void {
  expect(res, `${c.name}: no response`).toBeDefined();
  expect(res!.status, c.name).toBe(c.status);
  expect(res!.headers['content-type'], c.name).toMatch(/^application\/json/);
  const body = JSON.parse(res!.body) as { error: { code: string; message: string; request_id: string } };
  expect(Object.keys(body), c.name).toEqual(['error']);
  expect(body.error.code, c.name).toBe(c[style]);
  expect(body.error.message.length, c.name).toBeGreaterThan(0);
  if (c.id) expect(body.error.request_id, c.name).toBe(c.id);
  else expect(body.error.request_id, c.name).toMatch(UUID);
  expect(res!.headers['x-request-id'], c.name).toBe(body.error.request_id);
}

for (const style of ['console', 'invoicing'] as const) {
  describe(`${style} gateway: errors answered before any route`, () => {
    let app: GatewayApp;
    let port: number;
    beforeAll(async () => {
      ({ app, port } = await build(style));
    });
    afterAll(async () => {
      await app.close();
    });

    for (const c of cases) {
      it(`answers ${c.name} with the ${c.status} envelope`, async () => {
        const { responses, raw } = await rawRequest(port, c.request);
        expect(responses.length, `${c.name}: ${raw.slice(0, 300)}`).toBe(1);
        expectEnvelope(responses[0], c, style);
      });
    }

    it('keeps serving after a parser error on another connection', async () => {
      const { responses } = await rawRequest(port, get('/api/v1/users/1'));
      expect(responses[0]?.status).toBe(200);
    });

    it('answers a header far over the limit before the client finished sending', async () => {
      // 256 KB of headers: the parser refuses after 16 KB while the rest is still arriving; the answer must not be
      // lost to a connection reset.
      const { responses, raw } = await rawRequest(port, get('/api/v1/users/1', `X-Big: ${'a'.repeat(256 * 1024)}\r\n`));
      expect(responses.length, raw.slice(0, 200)).toBe(1);
      expectEnvelope(responses[0], cases[0]!, style);
    });
  });
}
