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

/** The rows of `doc`'s figures table (the lines after its header and separator). */
export function figuresRows(doc: string): string[] {
  const lines = doc.split('\n');
  const start = lines.indexOf(TABLE_HEADER);
  if (start < 0) return [];
  const rows: string[] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!);
  return rows;
}

/** The part a row was written for: its run cell reads `<part>: …` (rows written before parts were named: none). */
export const partOfRow = (row: string): string | undefined => /\| ([a-z]+): [^|]*\|$/.exec(row)?.[1];

/** A row's first cell, what it measures. */
const whatOf = (row: string): string => row.slice(2, row.indexOf(' | '));

/**
 * The table's rows after a run of some parts: each part in `fresh` gets its new rows, where its old ones stood (a part
 * new to the table goes at the end); every other part keeps the rows it had, since data/bench/latest.json holds only
 * what ran on this machine. An old row naming no part belongs to a fresh part when that part now writes a row
 * measuring the same thing.
 */
export function mergeFiguresRows(old: string[], fresh: Map<string, string[]>): string[] {
  const partByWhat = new Map<string, string>();
  for (const [part, rows] of fresh) for (const row of rows) partByWhat.set(whatOf(row), part);
  const out: string[] = [];
  const placed = new Set<string>();
  for (const row of old) {
    const part = partOfRow(row) ?? partByWhat.get(whatOf(row));
    if (part === undefined || !fresh.has(part)) {
      out.push(row);
      continue;
    }
    if (placed.has(part)) continue;
    placed.add(part);
    out.push(...fresh.get(part)!);
  }
  for (const [part, rows] of fresh) if (!placed.has(part)) out.push(...rows);
  return out;
}
