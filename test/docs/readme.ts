/** Reading README.md the way the docs tests need it. */

export const TOUR_HEADING = '## A five-minute tour';

/**
 * The tour's commands: every ```sh block between the tour's heading and the next `## ` heading, in order, joined
 * into one script. Blocks in other sections (the two commands) are not part of it.
 */
export function tourScript(readme: string): string {
  const lines = readme.split('\n');
  const start = lines.indexOf(TOUR_HEADING);
  if (start < 0) throw new Error(`README.md has no "${TOUR_HEADING}" heading`);
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  const blocks: string[] = [];
  let block: string[] | undefined;
  for (const line of lines.slice(start + 1, end < 0 ? undefined : end)) {
    if (block === undefined && line === '```sh') block = [];
    else if (block !== undefined && line === '```') {
      blocks.push(block.join('\n'));
      block = undefined;
    } else block?.push(line);
  }
  if (block !== undefined) throw new Error('README.md: a ```sh block of the tour is not closed');
  if (blocks.length === 0) throw new Error('README.md: the tour has no ```sh blocks');
  return `${blocks.join('\n')}\n`;
}
