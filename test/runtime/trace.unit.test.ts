import { describe, expect, it } from 'vitest';
import { continueTrace, formatTraceparent, newTrace, parseTraceparent } from '../../platform/trace.ts';

describe('W3C traceparent', () => {
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('parses a valid header (case-insensitively) and formats it back', () => {
    expect(parseTraceparent(valid)).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      flags: '01',
    });
    expect(parseTraceparent(valid.toUpperCase())).toEqual(parseTraceparent(valid));
    expect(formatTraceparent(parseTraceparent(valid)!)).toBe(valid);
    // A later version may append fields; they are ignored.
    expect(parseTraceparent(`01-${valid.slice(3)}-future`)?.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('refuses malformed headers', () => {
    for (const bad of [
      '',
      'garbage',
      `ff-${valid.slice(3)}`,
      `${valid}-extra`,
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      `00-${'z'.repeat(32)}-00f067aa0ba902b7-01`,
      `${valid}${'x'.repeat(600)}`,
    ]) {
      expect(parseTraceparent(bad), bad).toBeUndefined();
    }
  });

  it('continues a trace with a new span, or starts one', () => {
    const next = continueTrace(valid);
    expect(next.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(next.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(next.spanId).not.toBe('00f067aa0ba902b7');
    const fresh = continueTrace(undefined);
    expect(parseTraceparent(formatTraceparent(fresh))).toEqual(fresh);
    expect(newTrace().traceId).not.toBe(newTrace().traceId);
  });
});
