/**
 * Values for PostgreSQL from anything a process received (a request, an event, an agent): text and jsonb cannot hold
 * NUL characters, and jsonb refuses the `\udfff` escape JSON.stringify writes for a lone surrogate, so one such string
 * in an event would fail its consumer's insert on every delivery. What cannot be stored is made storable, never refused:
 * NUL is dropped, a lone surrogate becomes U+FFFD (what the driver's UTF-8 encoding makes of it in a text column).
 */

const storable = (s: string): string => {
  const noNul = s.includes('\u0000') ? s.replaceAll('\u0000', '') : s;
  return noNul.isWellFormed() ? noNul : noNul.toWellFormed();
};

/** A text parameter PostgreSQL stores as given (a command line read raw from /proc has NULs). */
export const pgText = (s: string): string => storable(s);

const needsFix = (s: string): boolean => s.includes('\u0000') || !s.isWellFormed();

/** JSON for a `?::jsonb` parameter (or `jsonb_to_recordset(?::jsonb)`): every string value and object key made storable. */
export function pgJson(value: unknown): string {
  return JSON.stringify(value, (_key: string, v: unknown) => {
    if (typeof v === 'string') return needsFix(v) ? storable(v) : v;
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).some(needsFix)) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [storable(k), x]));
    }
    return v;
  });
}

/** text[] literal for a parameter: {"a","b"} with quotes escaped. */
export const toPgArray = (values: readonly string[]): string =>
  `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;
