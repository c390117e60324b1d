/**
 * `new Date(ms).toISOString()` for the many timestamps of one answer (a chart's points), without a Date per point:
 * the day's `YYYY-MM-DDT` is made by Date once and kept while the timestamps stay on that day, the time of day is
 * plain arithmetic. Timestamps outside years 0000–9999 (or not integers) go through Date itself.
 */

const DAY_MS = 86_400_000;
/** 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z: within them Date writes a plain four-digit year. */
const FIRST_MS = -62_167_219_200_000;
const END_MS = 253_402_300_800_000;

let keptDay = Number.NaN;
let keptPrefix = '';

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));
const three = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : String(n));

export function isoUtc(ms: number): string {
  if (!Number.isInteger(ms) || ms < FIRST_MS || ms >= END_MS) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== keptDay) {
    keptPrefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    keptDay = day;
  }
  let rest = ms - day * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  return `${keptPrefix}${two(hours)}:${two(minutes)}:${two(seconds)}.${three(rest - seconds * 1000)}Z`;
}
