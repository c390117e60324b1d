import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pagePolicy, webConsole } from '../../gateway/console/web-console.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { createLogger } from '../../platform/logger.ts';

/** The console gateway's serving of a built console (a build of our own here), through Fastify's inject. */
describe('the web console as the console gateway serves it', () => {
  let app: GatewayApp;
  let root: string;
  const INDEX = '<!doctype html><title>console</title><script type="module" src="/assets/app-abc123.js"></script>';
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'web-dist-'));
    mkdirSync(join(root, 'assets'));
    writeFileSync(join(root, 'index.html'), INDEX);
    writeFileSync(join(root, 'assets', 'app-abc123.js'), 'console.log(1)');
    writeFileSync(join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    app = await createGatewayApp(
      {
        style: 'console',
        title: 't',
        version: '1',
        config: { SVC_CORS_ORIGINS: [], SVC_ENABLE_DEBUG_ENDPOINTS: false },
        log: createLogger('silent'),
        pages: (a) => webConsole(a, { root, connect: ['http://localhost:8080/', 'https://invoicing.example.net/x'] }),
      },
      (a) => {
        a.get('/api/v1/ping', async () => ({ data: 'pong' }));
      },
    );
  });
  afterAll(async () => {
    await app?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('answers / and every console path with index.html, never cached, under the page policy', async () => {
    for (const url of ['/', '/sign-in', '/reset-password?token=abc', '/hosts/3b1f/charts']) {
      const res = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe(INDEX);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(
        pagePolicy(['http://localhost:8080', 'https://invoicing.example.net']),
      );
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
  });

  it('the page policy allows no inline script or style, and calls to the two services only', () => {
    const policy = pagePolicy(['http://localhost:8080', 'https://invoicing.example.net']);
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("style-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).toContain("connect-src 'self' http://localhost:8080 https://invoicing.example.net");
    expect(policy).toContain("frame-ancestors 'none'");
  });

  it('caches hashed assets for a year, other files not', async () => {
    const asset = await app.inject({ method: 'GET', url: '/assets/app-abc123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.body).toBe('console.log(1)');
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const icon = await app.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['cache-control']).toBe('public, max-age=0');
  });

  it('leaves the API, missing files and other methods to the 404 envelope', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/v1/ping' })).json()).toEqual({ data: 'pong' });
    for (const [method, url] of [
      ['GET', '/api/v1/nothing'],
      ['GET', '/assets/missing-000.js'],
      ['POST', '/sign-in'],
    ] as const) {
      const res = await app.inject({ method, url, headers: { accept: 'text/html' } });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code, url).toBe('not_found');
    }
    const malformed = await app.inject({ method: 'GET', url: '/%E0%A4%A', headers: { accept: 'text/html' } });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error.code).toBe('bad_request');
    // Only files of the build are sent: a path out of it is at most the console's page.
    for (const url of ['/assets/../../../etc/passwd', '/assets/..%2f..%2f..%2fetc%2fpasswd', '/..%2fpackage.json']) {
      const res = await app.inject({ method: 'GET', url });
      expect([200, 404], url).toContain(res.statusCode);
      if (res.statusCode === 200) expect(res.body, url).toBe(INDEX);
    }
  });

  it('serves the files of a new build once index.html was replaced, and only then', async () => {
    writeFileSync(join(root, 'assets', 'app-new999.js'), 'console.log(2)');
    // Written beside the old build: not a file of the build the gateway serves yet.
    expect((await app.inject({ method: 'GET', url: '/assets/app-new999.js' })).statusCode).toBe(404);
    writeFileSync(join(root, 'index.html'), INDEX.replace('app-abc123', 'app-new999'));
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(root, 'index.html'), later, later);
    const res = await app.inject({ method: 'GET', url: '/assets/app-new999.js' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('console.log(2)');
    expect((await app.inject({ method: 'GET', url: '/' })).body).toContain('app-new999');
  });
});
