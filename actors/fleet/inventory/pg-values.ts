/** Values for PostgreSQL from what agents send: text and jsonb cannot hold NUL characters. */

/** A text parameter without NUL characters (a command line read raw from /proc has them): dropped, not refused. */
export const pgText = (s: string): string => (s.includes('\u0000') ? s.replaceAll('\u0000', '') : s);

/** JSON for a `?::jsonb` parameter, NUL characters dropped from every string value and object key. */
export function pgJson(value: unknown): string {
  return JSON.stringify(value, (_key: string, v: unknown) => {
    if (typeof v === 'string') return pgText(v);
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).some((k) => k.includes('\u0000'))) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [pgText(k), x]));
    }
    return v;
  });
}
