/** The browser's own time zone, the form's default. */
export const browserZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/**
 * The IANA names the browser knows, for the time-zone select; empty where it cannot list them (the form falls back to
 * typing one). UTC and the browser's own zone are always there (some engines list neither).
 */
export function timeZones(): string[] {
  const list = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  if (list.length === 0) return [];
  return [...new Set(['UTC', browserZone(), ...list])].sort((a, b) =>
    a === 'UTC' ? -1 : b === 'UTC' ? 1 : a.localeCompare(b),
  );
}

/** An instant as the occurrences route takes it: UTC, `…Z`, whole seconds. */
export const utc = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
