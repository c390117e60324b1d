/** Where `npm run bench:report` writes its table: the figures table of the benchmarks page, replaced in place. */

export const REPORT_DOC = 'docs/benchmarks.md';
export const TABLE_HEADER = '| what | figure: mean (min–max of the rounds) | target | run |';

/**
 * `doc` with its figures table (the header line and every `|` line after it) replaced by `table`; the text around it
 * is kept byte for byte. A page without the table is an error: the command must not quietly write nowhere.
 */
export function replaceFiguresTable(doc: string, table: string[]): string {
  const lines = doc.split('\n');
  const start = lines.indexOf(TABLE_HEADER);
  if (start < 0)
    throw new Error(`${REPORT_DOC} has no figures table (a line "${TABLE_HEADER}"): put one where the table belongs`);
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  return [...lines.slice(0, start), ...table, ...lines.slice(end)].join('\n');
}
