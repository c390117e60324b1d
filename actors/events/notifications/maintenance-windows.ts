import rrule from 'rrule';

/**
 * Maintenance windows, during which notifications are held back: one-off or recurring (an RFC 5545 RRULE), at a local
 * wall-clock time in an IANA time zone. A window recurs at the same local time whatever the UTC offset, so "every
 * Sunday 02:00–04:00 Europe/Berlin" is 01:00–03:00 UTC in winter and 00:00–02:00 UTC in summer.
 *
 * The rule is expanded in floating local time (rrule's dates are read as wall-clock, not UTC instants); each local
 * start and end is then converted to UTC here, with Intl, and every conversion is checked by converting back.
 *
 * Local times that do not exist or exist twice (DST changes) are resolved thus, for the start and the end alike:
 * - in a spring-forward gap, the local time moves to the first valid instant after the gap (the transition itself:
 *   02:30 in Berlin on 29 March 2026 becomes 03:00 CEST);
 * - in a fall-back overlap, the first (earlier) of the two instants is used (02:30 in Berlin on 25 October 2026 is
 *   02:30 CEST).
 * The end is always the local start + duration counted in wall-clock time, then converted, so a 02:00–04:00 window
 * is 03:00–04:00 CEST (one hour) on the spring-forward Sunday and 02:00 CEST–04:00 CET (three hours) on the fall-back
 * one. An occurrence whose whole local span falls in a gap is empty and is left out.
 */

const { RRule } = rrule;
type Rule = InstanceType<typeof RRule>;

/**
 * A window. `starts_at` is the local wall-clock start `YYYY-MM-DDTHH:mm` in `timezone` (no offset, no Z); for a
 * recurring window it is also the first occurrence (the rule's DTSTART). `rrule` is the rule's text without DTSTART,
 * with or without the `RRULE:` prefix; null for a one-off window.
 */
export type MaintenanceWindow = { starts_at: string; duration_minutes: number; timezone: string; rrule: string | null };
export type Occurrence = { start: Date; end: Date };

const MINUTE = 60_000;
const DAY = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether `tz` is a time zone name Intl knows (IANA names and UTC; not bare offsets such as +01:00). */
export function validTimeZone(tz: string): boolean {
  if (typeof tz !== 'string' || tz.trim() === '' || /^[+-]/.test(tz)) return false;
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

/** The local wall-clock time of an instant in a zone, as floating milliseconds (the wall clock read as if UTC). */
export function wallClockOf(instant: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(instant)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const wall = Date.UTC(
    parts.year ?? 0,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return wall + (((instant % 1000) + 1000) % 1000);
}

const offsetAt = (instant: number, timeZone: string): number => wallClockOf(instant, timeZone) - instant;

/**
 * The UTC instant of a local wall-clock time (floating milliseconds) in a zone, by the gap and overlap rules above.
 * Candidates come from the offsets a day either side; each is kept only if it converts back to the same wall clock.
 */
export function utcOfWallClock(wall: number, timeZone: string): number {
  const offsets = new Set([offsetAt(wall - DAY, timeZone), offsetAt(wall, timeZone), offsetAt(wall + DAY, timeZone)]);
  const valid = [...offsets].map((o) => wall - o).filter((utc) => wallClockOf(utc, timeZone) === wall);
  if (valid.length > 0) return Math.min(...valid);
  // In a gap: the wall clock jumps from before `wall` to after it. Find the transition, the first instant whose wall
  // clock is later than `wall`, between the candidates of the larger (after) and the smaller (before) offset.
  let lo = wall - Math.max(...offsets);
  let hi = wall - Math.min(...offsets);
  if (wallClockOf(lo, timeZone) > wall) return lo;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallClockOf(mid, timeZone) > wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

const STARTS_AT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/;

/** `YYYY-MM-DDTHH:mm` as floating milliseconds, or null when it is not a real calendar date and time. */
function parseStartsAt(text: string): number | null {
  const m = STARTS_AT.exec(text);
  if (!m) return null;
  const [y, mo, d, h, mi] = m.slice(1).map(Number) as [number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null;
  if (h > 23 || mi > 59) return null;
  return ms;
}

const PARTS = new Set([
  'FREQ',
  'INTERVAL',
  'COUNT',
  'UNTIL',
  'WKST',
  'BYMONTH',
  'BYWEEKNO',
  'BYYEARDAY',
  'BYMONTHDAY',
  'BYDAY',
  'BYHOUR',
  'BYMINUTE',
  'BYSETPOS',
]);
/** Each BY* part's allowed values: lowest, highest, and whether 0 is one of them (RFC 5545 §3.3.10). */
const RANGES: Record<string, [number, number, boolean]> = {
  BYMONTH: [1, 12, false],
  BYWEEKNO: [-53, 53, false],
  BYYEARDAY: [-366, 366, false],
  BYMONTHDAY: [-31, 31, false],
  BYHOUR: [0, 23, true],
  BYMINUTE: [0, 59, true],
  BYSETPOS: [-366, 366, false],
};
const FREQS = new Set(['YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY']);
const INT_LIST = /^[+-]?\d{1,3}(,[+-]?\d{1,3})*$/;
const DAY_LIST = /^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)(,([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU))*$/;

function stripPrefix(text: string): string {
  const trimmed = text.trim();
  return /^RRULE:/i.test(trimmed) ? trimmed.slice(6) : trimmed;
}

/**
 * Checks a window's rule strictly (rrule's own parser accepts unknown FREQ values and garbage counts): one RRULE
 * line, known parts only, no DTSTART (the window's starts_at is the start), no SECONDLY or MINUTELY frequency.
 */
export function parseWindowRule(text: string): { ok: true } | { ok: false; message: string } {
  const body = stripPrefix(text);
  if (body === '') return { ok: false, message: 'the rule is empty' };
  if (/[\r\n]/.test(body) || /DTSTART/i.test(body))
    return { ok: false, message: 'the rule must be a single RRULE without DTSTART (the window gives the start)' };
  const seen = new Map<string, string>();
  for (const part of body.split(';')) {
    const m = /^([A-Za-z]+)=(.+)$/.exec(part);
    if (!m?.[1] || !m[2]) return { ok: false, message: `"${part}" is not a NAME=VALUE rule part` };
    const name = m[1].toUpperCase();
    const value = m[2].toUpperCase();
    if (!PARTS.has(name)) return { ok: false, message: `${name} is not a supported rule part` };
    if (seen.has(name)) return { ok: false, message: `${name} appears twice` };
    seen.set(name, value);
  }
  const freq = seen.get('FREQ');
  if (!freq) return { ok: false, message: 'the rule needs a FREQ' };
  if (freq === 'SECONDLY' || freq === 'MINUTELY')
    return { ok: false, message: `FREQ=${freq} is too frequent for a maintenance window` };
  if (!FREQS.has(freq)) return { ok: false, message: `FREQ=${freq} is not a frequency` };
  for (const name of ['INTERVAL', 'COUNT']) {
    const v = seen.get(name);
    if (v !== undefined && (!/^\d{1,6}$/.test(v) || Number(v) < 1))
      return { ok: false, message: `${name} must be a positive whole number` };
  }
  if (seen.has('COUNT') && seen.has('UNTIL')) return { ok: false, message: 'COUNT and UNTIL cannot both be given' };
  const until = seen.get('UNTIL');
  if (until !== undefined && !/^\d{8}(T\d{6}Z?)?$/.test(until))
    return { ok: false, message: 'UNTIL must be a date (YYYYMMDD) or a date-time (YYYYMMDDTHHMMSSZ)' };
  const wkst = seen.get('WKST');
  if (wkst !== undefined && !/^(MO|TU|WE|TH|FR|SA|SU)$/.test(wkst))
    return { ok: false, message: 'WKST must be a day (MO…SU)' };
  const byday = seen.get('BYDAY');
  if (byday !== undefined && !DAY_LIST.test(byday))
    return { ok: false, message: 'BYDAY must list days such as MO,TU or 1SU,-1FR' };
  for (const name of ['BYMONTH', 'BYWEEKNO', 'BYYEARDAY', 'BYMONTHDAY', 'BYHOUR', 'BYMINUTE', 'BYSETPOS']) {
    const v = seen.get(name);
    if (v === undefined) continue;
    if (!INT_LIST.test(v)) return { ok: false, message: `${name} must list whole numbers` };
    const [lo, hi, zero] = RANGES[name]!;
    for (const n of v.split(',').map(Number))
      if (n < lo || n > hi || (n === 0 && !zero))
        return { ok: false, message: `${name} values must be ${zero ? '' : 'non-zero, '}from ${lo} to ${hi}` };
  }
  // rrule steps HOURLY by its interval until an hour matches: with an interval over 1 and BYHOUR it may never reach
  // one and never return.
  if (freq === 'HOURLY' && seen.has('BYHOUR') && Number(seen.get('INTERVAL') ?? '1') > 1)
    return { ok: false, message: 'FREQ=HOURLY with an INTERVAL over 1 cannot take BYHOUR (use FREQ=DAILY;BYHOUR=…)' };
  try {
    const rule = new RRule({ ...RRule.parseString(body), dtstart: new Date(Date.UTC(2026, 0, 1)) });
    rule.after(new Date(Date.UTC(2026, 0, 1)), true);
  } catch (error) {
    return { ok: false, message: `the rule is not valid (${(error as Error).message})` };
  }
  return { ok: true };
}

/** The window's rule over floating local time: DTSTART is starts_at; a UTC UNTIL is moved to the zone's wall clock. */
function floatingRule(window: MaintenanceWindow, start: number): Rule {
  const body = stripPrefix(window.rrule ?? '');
  const options = RRule.parseString(body);
  const untilText = /(?:^|;)UNTIL=([^;]+)/i.exec(body)?.[1];
  if (options.until && untilText?.toUpperCase().endsWith('Z'))
    options.until = new Date(wallClockOf(options.until.getTime(), window.timezone));
  return new RRule({ ...options, dtstart: new Date(start), tzid: null });
}

function checkWindow(window: MaintenanceWindow): number {
  const start = parseStartsAt(window.starts_at);
  if (start === null) throw new Error(`starts_at must be a local YYYY-MM-DDTHH:mm, got "${window.starts_at}"`);
  if (!validTimeZone(window.timezone)) throw new Error(`"${window.timezone}" is not a time zone`);
  if (!Number.isInteger(window.duration_minutes) || window.duration_minutes < 1)
    throw new Error('duration_minutes must be a positive whole number');
  if (window.rrule !== null) {
    const rule = parseWindowRule(window.rrule);
    if (!rule.ok) throw new Error(rule.message);
  }
  return start;
}

function occurrenceAt(wallStart: number, window: MaintenanceWindow): Occurrence | null {
  const start = utcOfWallClock(wallStart, window.timezone);
  const end = utcOfWallClock(wallStart + window.duration_minutes * MINUTE, window.timezone);
  return end > start ? { start: new Date(start), end: new Date(end) } : null;
}

/**
 * The occurrences overlapping [from, to) (end exclusive), in order, at most `limit`. Throws on an invalid window
 * (validate with parseWindowRule and validTimeZone when it is saved).
 */
export function occurrencesBetween(window: MaintenanceWindow, from: Date, to: Date, limit = 500): Occurrence[] {
  const start = checkWindow(window);
  const lo = from.getTime();
  const hi = to.getTime();
  if (!(hi > lo) || limit < 1) return [];
  const overlaps = (o: Occurrence | null): o is Occurrence =>
    o !== null && o.end.getTime() > lo && o.start.getTime() < hi;
  if (window.rrule === null) {
    const once = occurrenceAt(start, window);
    return overlaps(once) ? [once] : [];
  }
  // Floating bounds wide enough for any UTC offset (±14 h, a day to spare) and for a window that started earlier.
  const floatFrom = new Date(lo - DAY - window.duration_minutes * MINUTE);
  const floatTo = new Date(hi + DAY);
  const found: Occurrence[] = [];
  floatingRule(window, start).between(floatFrom, floatTo, true, (date) => {
    const o = occurrenceAt(date.getTime(), window);
    if (overlaps(o)) found.push(o);
    return found.length < limit;
  });
  return found;
}

/** The occurrence in force at `instant` (start inclusive, end exclusive), or null. */
export function activeWindowAt(window: MaintenanceWindow, instant: Date): Occurrence | null {
  const t = instant.getTime();
  const [hit] = occurrencesBetween(window, instant, new Date(t + 1)).filter(
    (o) => o.start.getTime() <= t && t < o.end.getTime(),
  );
  return hit ?? null;
}
