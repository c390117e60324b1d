/** Just enough of Markdown for the docs tests: headings, their GitHub anchors, and links, outside fenced code. */

const FENCE = /^\s*(```|~~~)/;

/** The lines that are not inside a fenced code block, with their 1-based numbers. */
function proseLines(text: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (FENCE.test(line)) fenced = !fenced;
    else if (!fenced) out.push({ text: line, line: i + 1 });
  });
  return out;
}

/** GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{Mn} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a file's headings give, with GitHub's -1, -2 … suffixes for repeated ones. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text: line } of proseLines(text)) {
    const m = /^#{1,6} (.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base);
    seen.set(base, n === undefined ? 0 : n + 1);
    anchors.add(n === undefined ? base : `${base}-${n + 1}`);
  }
  return anchors;
}

/** Inline links and images `[text](target)` outside code (fenced or `inline`), with their line numbers. */
export function linksOf(text: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  for (const { text: line, line: n } of proseLines(text)) {
    const withoutCode = line.replace(/`[^`]*`/g, '``');
    for (const m of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ target: m[1]!, line: n });
  }
  return links;
}
