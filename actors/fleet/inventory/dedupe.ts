/**
 * Agents report what the machine shows, and machines repeat themselves (two package databases listing one package,
 * a user in /etc/passwd twice, a pid reused between two reads). A repeated key must not fail the whole snapshot:
 * the first record wins, and the caller is told how many were dropped.
 */
export function firstByKey<T>(records: readonly T[], keyOf: (r: T) => string): { kept: T[]; dropped: number } {
  const seen = new Set<string>();
  const kept: T[] = [];
  for (const r of records) {
    const k = keyOf(r);
    if (seen.has(k)) continue;
    seen.add(k);
    kept.push(r);
  }
  return { kept, dropped: records.length - kept.length };
}

/** A composite key that cannot collide across fields (JSON of the values, in order). */
export const keyOfFields =
  (fields: readonly string[]) =>
  (r: object): string =>
    JSON.stringify(fields.map((f) => (r as Record<string, unknown>)[f]));
