import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocuments, type OpenApiDocuments } from '../../scripts/openapi.ts';
import { testConfig } from '../support/env.ts';

/**
 * The documents both gateways serve at /swagger/json are what client generators and linters need.
 * Run through the real tools (devDependencies): Redocly CLI's recommended rules, openapi-typescript, and a typed
 * openapi-fetch call compiled by tsc. (What the documents say, read directly: openapi.unit.test.ts.)
 */
const run = promisify(execFile);
const bin = (path: string): string => resolve('node_modules', path);

let docs: OpenApiDocuments;
let dir: string;

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
  mkdirSync('data', { recursive: true });
  // Under the repository, so the compiled client resolves openapi-fetch from node_modules.
  dir = mkdtempSync(join(resolve('data'), 'openapi-'));
  for (const [name, doc] of Object.entries(docs)) writeFileSync(join(dir, `${name}.json`), JSON.stringify(doc));
}, 60_000);
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the OpenAPI documents', () => {
  it.each(['console', 'invoicing'] as const)(
    '%s: redocly lint (recommended rules) finds no error',
    async (name) => {
      const { stdout } = await run(
        process.execPath,
        [bin('@redocly/cli/bin/cli.js'), 'lint', join(dir, `${name}.json`), '--format=json', '--max-problems=1000'],
        { maxBuffer: 64 << 20 },
      ).catch((err: { stdout: string }) => ({ stdout: err.stdout }));
      const problems = (
        JSON.parse(stdout) as {
          problems: { severity: string; ruleId: string; message: string; location: { pointer: string }[] }[];
        }
      ).problems;
      const errors = problems
        .filter((p) => p.severity === 'error')
        .map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
      expect(errors).toEqual([]);
      // What the issue found besides the errors: operations without an id or without a 4xx answer.
      expect(
        problems.filter((p) =>
          [
            'operation-operationId',
            'operation-4xx-response',
            'operation-2xx-response',
            'no-unused-components',
          ].includes(p.ruleId),
        ),
      ).toEqual([]);
    },
    120_000,
  );

  it('generates types (openapi-typescript) that a typed openapi-fetch client compiles against', async () => {
    for (const name of ['console', 'invoicing']) {
      await run(process.execPath, [
        bin('openapi-typescript/bin/cli.js'),
        join(dir, `${name}.json`),
        '-o',
        join(dir, `${name}-api.ts`),
      ]);
    }
    writeFileSync(
      join(dir, 'client.ts'),
      `import createClient from 'openapi-fetch';
import type { paths as Console } from './console-api.ts';
import type { paths as Invoicing } from './invoicing-api.ts';

const consoleApi = createClient<Console>({ baseUrl: 'https://console.example.net' });
const invoicing = createClient<Invoicing>({ baseUrl: 'https://billing.example.net' });

export async function tour(): Promise<string[]> {
  const { data, error } = await consoleApi.GET('/api/v1/clients', { params: { query: { page: 1, per_page: 20 } } });
  if (error) return [error.error.code, error.error.request_id];
  const names: string[] = (data?.data ?? []).map((c) => c.name);
  const created = await consoleApi.POST('/api/v1/clients', { body: { name: 'Acme', slug: 'acme' } });
  if (created.data) names.push(created.data.data.id);
  // @ts-expect-error a path the API does not have
  await consoleApi.GET('/api/v1/no-such-route');
  // @ts-expect-error a body without the required slug
  await consoleApi.POST('/api/v1/clients', { body: { name: 'Acme' } });
  const invoice = await invoicing.GET('/api/v1/invoices/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
  if (invoice.error) names.push(invoice.error.error.message);
  return names;
}
`,
    );
    const tsc = await run(process.execPath, [
      bin('typescript/bin/tsc'),
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      '--target',
      'es2022',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--allowImportingTsExtensions',
      '--types',
      'node',
      join(dir, 'client.ts'),
    ]).catch((err: { stdout: string }) => ({ stdout: err.stdout }));
    expect(tsc.stdout).toBe('');
  }, 180_000);
});
