import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generatedApiTypes } from '../../scripts/web-api.ts';

const repo = new URL('../../', import.meta.url);

/**
 * The console's API client is typed from the gateways' own OpenAPI documents: the checked-in types must be what
 * `npm run web:api` generates today, and the console must type-check against them. A changed route then fails here.
 */
describe('the web console sources', () => {
  it('carry the API types the gateways generate today (npm run web:api)', async () => {
    const files = await generatedApiTypes();
    expect(Object.keys(files).sort()).toEqual(['console.ts', 'invoicing.ts']);
    for (const [file, text] of Object.entries(files)) {
      const current = readFileSync(new URL(`web/src/api/${file}`, repo), 'utf8');
      expect(current === text, `web/src/api/${file} is out of date: run npm run web:api`).toBe(true);
    }
  });

  it('type-check against those types (tsc -p web/tsconfig.json)', () => {
    const tsc = new URL('node_modules/typescript/bin/tsc', repo).pathname;
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '--noEmit', '-p', 'web/tsconfig.json'], {
        cwd: repo.pathname,
        encoding: 'utf8',
      });
    } catch (err) {
      out = String((err as { stdout?: string }).stdout ?? err);
    }
    expect(out).toBe('');
  }, 60_000);
});
