/** Where a PQL error points: the API words every error "… at position N", 1-based, in code points. */
export function errorPosition(message: string): number | undefined {
  const m = / at position (\d+)\b/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/** The query split around the character the error points at (past the end: an empty mark after it). */
export function splitAt(query: string, position: number): { before: string; at: string; after: string } {
  const chars = [...query];
  const i = Math.max(0, Math.min(position - 1, chars.length));
  return { before: chars.slice(0, i).join(''), at: chars[i] ?? ' ', after: chars.slice(i + 1).join('') };
}

/** The token being typed at the end of the query: what field completion matches against. */
export function currentToken(query: string): string {
  const m = /([A-Za-z_][\w.]*)$/.exec(query);
  return m ? m[1]! : '';
}
