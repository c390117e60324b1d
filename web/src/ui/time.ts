/** A UTC timestamp from the API in the browser's own time zone. */
export const formatTime = (iso: string): string =>
  new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
