import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/** The rule set `npm run lint` checks (.dependency-cruiser.cjs). */
const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as IConfiguration;

const violationsOf = (result: ICruiseResult): string[] =>
  result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();

async function cruiseIn(baseDir: string, roots: string[], tsConfig = false): Promise<ICruiseResult> {
  const { output } = await cruise(roots, {
    ...config.options,
    ...(tsConfig ? {} : { tsConfig: undefined }),
    baseDir,
    ruleSet: { forbidden: config.forbidden ?? [] },
    validate: true,
  });
  if (typeof output === 'string') throw new Error('dependency-cruiser answered text');
  return output;
}

describe('the dependency rules', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-layers-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (path: string, ...imports: string[]): void => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), `${imports.map((i) => `import '${i}';`).join('\n')}\nexport const x = 1;\n`);
  };

  it('refuse each deliberate violation, and only those', async () => {
    // Allowed: a domain on the platform and the contracts, the gateway and main on a domain's face.
    file('actors/fleet/ok.ts', '../../platform/p.ts', '../../contracts/c.ts');
    file('actors/identity/mod.ts', './inside.ts');
    file('actors/identity/inside.ts');
    file('gateway/ok.ts', '../actors/identity/mod.ts', '../platform/p.ts');
    file('main.ts', './actors/identity/mod.ts', './actors/index.ts', './gateway/ok.ts');
    file('actors/index.ts', './fleet/ok.ts', './identity/mod.ts');
    file('contracts/c.ts');
    file('platform/p.ts', '../contracts/c.ts');
    // One violation of each rule.
    file('actors/fleet/reach.ts', '../identity/inside.ts');
    file('actors/events/edge.ts', '../../gateway/ok.ts');
    file('gateway/inside.ts', '../actors/identity/inside.ts');
    file('gateway/up.ts', '../main.ts');
    file('migrations/run.ts', '../actors/fleet/ok.ts');
    file('platform/up.ts', '../actors/identity/mod.ts');
    file('contracts/up.ts', '../platform/p.ts');
    file('agent/up.ts', '../actors/identity/mod.ts');
    file('migrations/postgres/M1.ts', '../../actors/index.ts');
    file('web/src/ok.ts', './api/console.ts');
    file('web/src/api/console.ts');
    file('web/src/up.ts', '../../contracts/c.ts');
    file('actors/servicedesk/a.ts', './b.ts');
    file('actors/servicedesk/b.ts', './a.ts');
    // A circle is reported once, at the module where the cruise met it.

    const result = await cruiseIn(dir, [
      'actors',
      'agent',
      'contracts',
      'gateway',
      'main.ts',
      'migrations',
      'platform',
      'web',
    ]);
    expect(violationsOf(result)).toEqual(
      [
        'agent-standalone: agent/up.ts → actors/identity/mod.ts',
        'composition-to-domain-internals: migrations/run.ts → actors/fleet/ok.ts',
        'contracts-only-zod: contracts/up.ts → platform/p.ts',
        'domain-to-domain: actors/fleet/reach.ts → actors/identity/inside.ts',
        'domain-to-edge: actors/events/edge.ts → gateway/ok.ts',
        'gateway-to-composition: gateway/up.ts → main.ts',
        'gateway-to-domain-internals: gateway/inside.ts → actors/identity/inside.ts',
        'migrations-schema-only: migrations/postgres/M1.ts → actors/index.ts',
        'no-circular: actors/servicedesk/a.ts → actors/servicedesk/b.ts',
        'platform-to-above: platform/up.ts → actors/identity/mod.ts',
        'web-public-api-only: web/src/up.ts → contracts/c.ts',
      ].sort(),
    );
  });

  it('hold on this repository', async () => {
    const roots = [
      'main.ts',
      'platform',
      'actors',
      'gateway',
      'contracts',
      'migrations',
      'agent',
      'scripts',
      'bench',
      'test',
    ];
    const result = await cruiseIn(process.cwd(), roots, true);
    expect(violationsOf(result)).toEqual([]);
    expect(result.summary.totalCruised).toBeGreaterThan(400);
  });
});
