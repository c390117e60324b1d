import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPORT_DOC, replaceFiguresTable, TABLE_HEADER } from '../../bench/report-doc.ts';

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
