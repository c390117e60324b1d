import { describe, expect, it } from 'vitest';
import {
  activeWindowAt,
  occurrencesBetween,
  parseWindowRule,
  utcOfWallClock,
  validTimeZone,
  type MaintenanceWindow,
} from '../../../actors/events/notifications/maintenance-windows.ts';

/**
 * Maintenance windows at exact UTC instants: a weekly Sunday 02:00–04:00 window in Europe/Berlin and in
 * America/New_York, on ordinary winter and summer Sundays and on the 2026 DST-change Sundays.
 */

const weekly = (timezone: string, extra = ''): MaintenanceWindow => ({
  starts_at: '2026-01-04T02:00', // a Sunday
  duration_minutes: 120,
  timezone,
  rrule: `RRULE:FREQ=WEEKLY;BYDAY=SU${extra}`,
});
const at = (iso: string) => new Date(iso);
const iso = (o: { start: Date; end: Date } | null) => o && { start: o.start.toISOString(), end: o.end.toISOString() };
const span = (start: string, end: string) => ({ start: `${start}:00.000Z`, end: `${end}:00.000Z` });

describe('a weekly Sunday 02:00–04:00 window in Europe/Berlin', () => {
  const w = weekly('Europe/Berlin');

  it('is 01:00–03:00 UTC on a winter Sunday', () => {
    expect(iso(activeWindowAt(w, at('2026-01-18T01:00:00Z')))).toEqual(span('2026-01-18T01:00', '2026-01-18T03:00'));
    expect(activeWindowAt(w, at('2026-01-18T00:59:59.999Z'))).toBeNull();
    expect(iso(activeWindowAt(w, at('2026-01-18T02:59:59.999Z')))).toEqual(
      span('2026-01-18T01:00', '2026-01-18T03:00'),
    );
    expect(activeWindowAt(w, at('2026-01-18T03:00:00Z'))).toBeNull(); // end exclusive
    expect(activeWindowAt(w, at('2026-01-17T01:30:00Z'))).toBeNull(); // a Saturday
  });

  it('is 00:00–02:00 UTC on a summer Sunday', () => {
    expect(iso(activeWindowAt(w, at('2026-07-05T00:00:00Z')))).toEqual(span('2026-07-05T00:00', '2026-07-05T02:00'));
    expect(activeWindowAt(w, at('2026-07-05T02:00:00Z'))).toBeNull();
    expect(activeWindowAt(w, at('2026-07-04T23:59:59Z'))).toBeNull();
  });

  it('on spring-forward (29 Mar 2026) starts at 03:00 CEST (01:00 UTC) and ends at 04:00 CEST', () => {
    expect(iso(activeWindowAt(w, at('2026-03-29T01:00:00Z')))).toEqual(span('2026-03-29T01:00', '2026-03-29T02:00'));
    expect(activeWindowAt(w, at('2026-03-29T00:59:59Z'))).toBeNull();
    expect(activeWindowAt(w, at('2026-03-29T02:00:00Z'))).toBeNull();
  });

  it('on fall-back (25 Oct 2026) starts at the first 02:00 (CEST, 00:00 UTC) and ends at 04:00 CET (03:00 UTC)', () => {
    expect(iso(activeWindowAt(w, at('2026-10-25T00:00:00Z')))).toEqual(span('2026-10-25T00:00', '2026-10-25T03:00'));
    expect(activeWindowAt(w, at('2026-10-24T23:59:59Z'))).toBeNull();
    expect(iso(activeWindowAt(w, at('2026-10-25T02:30:00Z')))).toEqual(span('2026-10-25T00:00', '2026-10-25T03:00'));
    expect(activeWindowAt(w, at('2026-10-25T03:00:00Z'))).toBeNull();
  });

  it('lists the occurrences across both changes', () => {
    const list = occurrencesBetween(w, at('2026-03-21T00:00:00Z'), at('2026-04-06T00:00:00Z')).map(iso);
    expect(list).toEqual([
      span('2026-03-22T01:00', '2026-03-22T03:00'),
      span('2026-03-29T01:00', '2026-03-29T02:00'),
      span('2026-04-05T00:00', '2026-04-05T02:00'),
    ]);
    const autumn = occurrencesBetween(w, at('2026-10-18T00:00:00Z'), at('2026-11-02T00:00:00Z')).map(iso);
    expect(autumn).toEqual([
      span('2026-10-18T00:00', '2026-10-18T02:00'),
      span('2026-10-25T00:00', '2026-10-25T03:00'),
      span('2026-11-01T01:00', '2026-11-01T03:00'),
    ]);
  });
});

describe('a weekly Sunday 02:00–04:00 window in America/New_York', () => {
  const w = weekly('America/New_York');

  it('is 07:00–09:00 UTC in winter and 06:00–08:00 UTC in summer', () => {
    expect(iso(activeWindowAt(w, at('2026-01-11T07:00:00Z')))).toEqual(span('2026-01-11T07:00', '2026-01-11T09:00'));
    expect(activeWindowAt(w, at('2026-01-11T09:00:00Z'))).toBeNull();
    expect(iso(activeWindowAt(w, at('2026-07-12T06:00:00Z')))).toEqual(span('2026-07-12T06:00', '2026-07-12T08:00'));
    expect(activeWindowAt(w, at('2026-07-12T05:59:59Z'))).toBeNull();
  });

  it('on spring-forward (8 Mar 2026) starts at 03:00 EDT (07:00 UTC) and ends at 04:00 EDT (08:00 UTC)', () => {
    expect(iso(activeWindowAt(w, at('2026-03-08T07:00:00Z')))).toEqual(span('2026-03-08T07:00', '2026-03-08T08:00'));
    expect(activeWindowAt(w, at('2026-03-08T06:59:59Z'))).toBeNull();
    expect(activeWindowAt(w, at('2026-03-08T08:00:00Z'))).toBeNull();
  });

  it('on fall-back (1 Nov 2026) 02:00 exists once (EST): 07:00–09:00 UTC', () => {
    expect(iso(activeWindowAt(w, at('2026-11-01T07:00:00Z')))).toEqual(span('2026-11-01T07:00', '2026-11-01T09:00'));
    expect(activeWindowAt(w, at('2026-11-01T06:59:59Z'))).toBeNull();
  });

  it('an ambiguous 01:30 on fall-back day takes the first (EDT) occurrence', () => {
    const early = { ...w, starts_at: '2026-01-04T01:30', duration_minutes: 60 };
    expect(iso(activeWindowAt(early, at('2026-11-01T05:30:00Z')))).toEqual(
      span('2026-11-01T05:30', '2026-11-01T07:30'),
    );
  });
});

describe('conversions, one-off windows, COUNT and UNTIL', () => {
  it('converts wall clock to UTC and back, including gaps and overlaps', () => {
    const wall = (s: string) => Date.parse(`${s}:00Z`);
    expect(new Date(utcOfWallClock(wall('2026-03-29T02:30'), 'Europe/Berlin')).toISOString()).toBe(
      '2026-03-29T01:00:00.000Z',
    );
    expect(new Date(utcOfWallClock(wall('2026-10-25T02:30'), 'Europe/Berlin')).toISOString()).toBe(
      '2026-10-25T00:30:00.000Z',
    );
    expect(new Date(utcOfWallClock(wall('2026-06-01T12:00'), 'Asia/Kolkata')).toISOString()).toBe(
      '2026-06-01T06:30:00.000Z',
    );
    expect(new Date(utcOfWallClock(wall('2026-06-01T12:00'), 'UTC')).toISOString()).toBe('2026-06-01T12:00:00.000Z');
  });

  it('a one-off window has a single occurrence', () => {
    const once: MaintenanceWindow = {
      starts_at: '2026-05-10T22:00',
      duration_minutes: 90,
      timezone: 'Europe/Berlin',
      rrule: null,
    };
    expect(iso(activeWindowAt(once, at('2026-05-10T20:00:00Z')))).toEqual(span('2026-05-10T20:00', '2026-05-10T21:30'));
    expect(activeWindowAt(once, at('2026-05-10T21:30:00Z'))).toBeNull();
    expect(activeWindowAt(once, at('2026-05-17T20:00:00Z'))).toBeNull();
    expect(occurrencesBetween(once, at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'))).toHaveLength(1);
    expect(occurrencesBetween(once, at('2026-05-10T21:30:00Z'), at('2027-01-01T00:00:00Z'))).toHaveLength(0);
  });

  it('COUNT stops after that many occurrences; the limit caps a listing', () => {
    const w = weekly('Europe/Berlin', ';COUNT=3');
    const list = occurrencesBetween(w, at('2025-12-01T00:00:00Z'), at('2027-01-01T00:00:00Z')).map(iso);
    expect(list).toEqual([
      span('2026-01-04T01:00', '2026-01-04T03:00'),
      span('2026-01-11T01:00', '2026-01-11T03:00'),
      span('2026-01-18T01:00', '2026-01-18T03:00'),
    ]);
    expect(activeWindowAt(w, at('2026-01-25T01:30:00Z'))).toBeNull();
    expect(
      occurrencesBetween(weekly('Europe/Berlin'), at('2026-01-01T00:00:00Z'), at('2030-01-01T00:00:00Z'), 5),
    ).toHaveLength(5);
  });

  it('UNTIL in UTC is an instant, a floating UNTIL is local', () => {
    // The 1 Feb occurrence starts at 01:00 UTC: an UNTIL of 00:59:59Z leaves it out, 01:00:00Z keeps it.
    const before = weekly('Europe/Berlin', ';UNTIL=20260201T005959Z');
    const on = weekly('Europe/Berlin', ';UNTIL=20260201T010000Z');
    const range = [at('2026-01-01T00:00:00Z'), at('2026-03-01T00:00:00Z')] as const;
    expect(occurrencesBetween(before, ...range)).toHaveLength(4);
    expect(occurrencesBetween(on, ...range)).toHaveLength(5);
    expect(occurrencesBetween(weekly('Europe/Berlin', ';UNTIL=20260201'), ...range)).toHaveLength(4);
  });

  it('a window in force before `from` is found by looking back its duration', () => {
    const long = { ...weekly('Europe/Berlin'), duration_minutes: 36 * 60 };
    expect(iso(activeWindowAt(long, at('2026-01-19T12:00:00Z')))).toEqual(span('2026-01-18T01:00', '2026-01-19T13:00'));
  });
});

describe('parseWindowRule and validTimeZone', () => {
  it('accepts rules with or without the RRULE: prefix', () => {
    for (const r of [
      'FREQ=WEEKLY;BYDAY=SU',
      'RRULE:FREQ=WEEKLY;BYDAY=SU',
      'FREQ=MONTHLY;BYDAY=1SA;INTERVAL=2',
      'FREQ=DAILY;COUNT=10',
      'FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24',
      'FREQ=HOURLY;INTERVAL=6',
      'FREQ=DAILY;BYHOUR=2,14;BYMINUTE=30',
      'FREQ=MONTHLY;BYMONTHDAY=-1',
    ])
      expect(parseWindowRule(r), r).toEqual({ ok: true });
  });

  it('refuses DTSTART, SECONDLY and MINUTELY, and garbage', () => {
    const refused = [
      'DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY',
      'FREQ=DAILY;DTSTART=20260101T000000Z',
      'FREQ=SECONDLY',
      'FREQ=MINUTELY;INTERVAL=30',
      'garbage',
      '',
      'RRULE:',
      'FREQ=BOGUS',
      'BYDAY=SU',
      'FREQ=DAILY;COUNT=abc',
      'FREQ=DAILY;COUNT=0',
      'FREQ=WEEKLY;BYDAY=XX',
      'FREQ=DAILY;FOO=1',
      'FREQ=DAILY;UNTIL=tomorrow',
      'FREQ=DAILY;COUNT=2;UNTIL=20260101',
      'FREQ=DAILY;FREQ=WEEKLY',
      // Values out of their range, and an hourly rule rrule could step through forever looking for its hour.
      'FREQ=HOURLY;BYHOUR=99',
      'FREQ=DAILY;BYMINUTE=60',
      'FREQ=YEARLY;BYMONTH=13',
      'FREQ=MONTHLY;BYMONTHDAY=0',
      'FREQ=HOURLY;INTERVAL=2;BYHOUR=1',
    ];
    for (const r of refused) {
      const result = parseWindowRule(r);
      expect(result.ok, r).toBe(false);
      if (!result.ok) expect(result.message.length).toBeGreaterThan(5);
    }
    expect(parseWindowRule('FREQ=MINUTELY')).toEqual({
      ok: false,
      message: 'FREQ=MINUTELY is too frequent for a maintenance window',
    });
  });

  it('knows IANA zones', () => {
    for (const tz of ['Europe/Berlin', 'America/New_York', 'UTC', 'Asia/Kolkata'])
      expect(validTimeZone(tz), tz).toBe(true);
    for (const tz of ['Mars/Olympus', '', 'Europe/Berlinn', '+01:00', 'not a zone'])
      expect(validTimeZone(tz), tz).toBe(false);
  });

  it('an invalid window throws when expanded', () => {
    const w = weekly('Europe/Berlin');
    expect(() => activeWindowAt({ ...w, timezone: 'Nowhere/Land' }, at('2026-01-04T01:00:00Z'))).toThrow(/time zone/);
    expect(() => activeWindowAt({ ...w, rrule: 'FREQ=SECONDLY' }, at('2026-01-04T01:00:00Z'))).toThrow(/too frequent/);
    expect(() => activeWindowAt({ ...w, starts_at: '2026-02-30T02:00' }, at('2026-01-04T01:00:00Z'))).toThrow(
      /starts_at/,
    );
    expect(() => activeWindowAt({ ...w, starts_at: '2026-01-04T02:00Z' }, at('2026-01-04T01:00:00Z'))).toThrow(
      /starts_at/,
    );
    expect(() => activeWindowAt({ ...w, duration_minutes: 0 }, at('2026-01-04T01:00:00Z'))).toThrow(/duration/);
  });
});
