import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  figuresRows,
  mergeFiguresRows,
  partOfRow,
  REPORT_DOC,
  replaceFiguresTable,
  TABLE_HEADER,
} from '../../bench/report-doc.ts';
import { hopSteps, type Spread } from '../../bench/stats.ts';

/** `npm run bench:report` rewrites the figures table of docs/benchmarks.md in place and nothing else. */

describe('bench:report target', () => {
  it('replaces the figures table and keeps the text around it byte for byte', () => {
    const doc = [
      '# Benchmarks',
      '',
      'Latest runs:',
      '',
      TABLE_HEADER,
      '|---|---|---|---|',
      '| old | 1 | | then |',
      '| old | 2 | | then |',
      '',
      'Notes after.',
      '',
    ].join('\n');
    const table = [TABLE_HEADER, '|---|---|---|---|', '| new | 3 | ≤ 4 | now |'];
    expect(replaceFiguresTable(doc, table)).toBe(
      ['# Benchmarks', '', 'Latest runs:', '', ...table, '', 'Notes after.', ''].join('\n'),
    );
  });

  it('refuses a page without the table', () => {
    expect(() => replaceFiguresTable('# Benchmarks\n\nno table\n', [TABLE_HEADER])).toThrow(/no figures table/);
  });

  it('the committed page has the table (so the command finds it)', () => {
    expect(readFileSync(REPORT_DOC, 'utf8').split('\n')).toContain(TABLE_HEADER);
  });
});

describe('bench:report merge', () => {
  const row = (what: string, figure: string, run: string): string => `| ${what} | ${figure} |  | ${run} |`;

  it('names the part a row was written for from its run cell', () => {
    expect(partOfRow(row('a', '1', 'hop: 2026-12-03 17:27 UTC, 5×8s'))).toBe('hop');
    expect(partOfRow(row('a', '1', '2026-12-03 17:27 UTC, 5×8s'))).toBeUndefined();
  });

  it('replaces the rows of the parts that ran, in place, and keeps every other part', () => {
    const old = [
      row('hop a', '1', 'hop: then'),
      row('hop b', '2', 'hop: then'),
      row('login', '3', 'login: then'),
      row('web', '4', '2026-11-30, headless Chromium'),
      row('runtime old', '5', 'runtime: then'),
    ];
    const fresh = new Map([
      ['hop', [row('hop a', '10', 'hop: now')]],
      ['runtime', [row('runtime new', '11', 'runtime: now'), row('runtime more', '12', 'runtime: now')]],
      ['agent', [row('agent', '13', 'agent: now')]],
    ]);
    expect(mergeFiguresRows(old, fresh)).toEqual([
      row('hop a', '10', 'hop: now'),
      row('login', '3', 'login: then'),
      row('web', '4', '2026-11-30, headless Chromium'),
      row('runtime new', '11', 'runtime: now'),
      row('runtime more', '12', 'runtime: now'),
      row('agent', '13', 'agent: now'),
    ]);
  });

  it('takes a row naming no part as the fresh part that measures the same thing', () => {
    const old = [row('signature', '7 µs', '2026-11-29'), row('me', '3158 req/s', '2026-11-29')];
    const fresh = new Map([['signing', [row('signature', '8 µs', 'signing: now')]]]);
    expect(mergeFiguresRows(old, fresh)).toEqual([row('signature', '8 µs', 'signing: now'), old[1]]);
  });

  it('reads the rows of the page it rewrites', () => {
    const doc = ['x', TABLE_HEADER, '|---|---|---|---|', '| a | 1 | | hop: t |', '', 'after'].join('\n');
    expect(figuresRows(doc)).toEqual(['| a | 1 | | hop: t |']);
    expect(figuresRows('no table')).toEqual([]);
  });
});

describe('the hop part taken apart by step', () => {
  const cpu = (mean: number): Record<string, Spread> => ({ system: { mean, min: mean, max: mean } });

  it('is each path minus the one before it, adding up to the single process above bare', () => {
    const steps = hopSteps({
      direct: cpu(0.3),
      noHop: cpu(0.35),
      bareHop: cpu(0.42),
      runtimeHop: cpu(0.47),
      single: cpu(0.6),
    })!;
    expect(steps.map((s) => s.step)).toEqual([
      "the gateway's stack",
      'a bare NATS hop inside it',
      "the runtime's hop instead",
      "the rest of the system's process",
    ]);
    expect(steps.map((s) => Number(s.ms.toFixed(3)))).toEqual([0.05, 0.07, 0.05, 0.13]);
    expect(steps.reduce((a, s) => a + s.ms, 0)).toBeCloseTo(0.3);
  });

  it('is left out for a run without one of the paths', () => {
    expect(hopSteps({ direct: cpu(0.3), noHop: cpu(0.35), single: cpu(0.6) })).toBeUndefined();
    expect(hopSteps(undefined)).toBeUndefined();
  });
});
