import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/** One release number: package.json's, which /healthz, the agent's --version and CHANGELOG.md all show. */

const execFileAsync = promisify(execFile);
const packageVersion = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({ SVC_ACTORS: 'none', SVC_GATEWAYS: 'invoicing' });
});

afterAll(async () => {
  await sys?.stop();
});

describe('version', () => {
  it('the agent prints package.json’s version for --version', async () => {
    const { stdout } = await execFileAsync(process.execPath, ['agent/main.ts', '--version'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(stdout).toBe(`${packageVersion}\n`);
  });

  it('the invoicing /healthz reports package.json’s version', async () => {
    const res = await sys.invoicingHttp({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect((res.json() as { version: string }).version).toBe(packageVersion);
  });

  it('no source file carries a copy of the version (agent/, gateway/, actors/, contracts/, main.ts)', () => {
    const sources = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
      });
    const literal = new RegExp(`['"\`]${packageVersion.replaceAll('.', '\\.')}['"\`]`);
    const copies = [...['agent', 'gateway', 'actors', 'contracts'].flatMap(sources), 'main.ts'].filter((f) =>
      literal.test(readFileSync(f, 'utf8')),
    );
    expect(copies).toEqual([]);
  });

  it('CHANGELOG.md has a section for package.json’s version', () => {
    expect(readFileSync('CHANGELOG.md', 'utf8')).toMatch(
      new RegExp(`^## \\[${packageVersion.replaceAll('.', '\\.')}\\]`, 'm'),
    );
  });
});
