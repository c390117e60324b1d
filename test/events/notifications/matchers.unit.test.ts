import { describe, expect, it } from 'vitest';
import { matcherProblem, matches, matchesAll } from '../../../actors/events/notifications/matchers.ts';

describe('notification label matchers', () => {
  const labels = { alertname: 'DiskFull', severity: 'critical', instance: 'db-1:9100' };

  it('compares values, a missing label being the empty string', () => {
    expect(matches({ label: 'severity', op: '=', value: 'critical' }, labels)).toBe(true);
    expect(matches({ label: 'severity', op: '!=', value: 'critical' }, labels)).toBe(false);
    expect(matches({ label: 'team', op: '=', value: '' }, labels)).toBe(true);
    expect(matches({ label: 'team', op: '!=', value: 'ops' }, labels)).toBe(true);
  });

  it('anchors regular expressions at both ends', () => {
    expect(matches({ label: 'instance', op: '=~', value: 'db-.*' }, labels)).toBe(true);
    expect(matches({ label: 'instance', op: '=~', value: 'db' }, labels)).toBe(false);
    expect(matches({ label: 'alertname', op: '=~', value: 'Disk|CPU' }, labels)).toBe(false);
    expect(matches({ label: 'alertname', op: '=~', value: 'Disk.*|CPU' }, labels)).toBe(true);
    expect(matches({ label: 'alertname', op: '!~', value: 'Disk.*' }, labels)).toBe(false);
  });

  it('needs every matcher; none is a match', () => {
    expect(
      matchesAll(
        [
          { label: 'severity', op: '=', value: 'critical' },
          { label: 'instance', op: '=~', value: 'web-.*' },
        ],
        labels,
      ),
    ).toBe(false);
    expect(matchesAll([], labels)).toBe(true);
  });

  it('names a regular expression that does not compile', () => {
    expect(matcherProblem({ label: 'a', op: '=~', value: '(' })).toMatch(/not a valid regular expression/);
    expect(matcherProblem({ label: 'a', op: '=', value: '(' })).toBeNull();
    expect(matcherProblem({ label: 'a', op: '=~', value: 'x)|(?:.*' })).toMatch(/not a valid regular expression/);
  });

  it('refuses repeated repeated groups, which backtrack exponentially', () => {
    for (const value of ['(a+)+b', '(a*)*', '(x|a+){2,}', '(?:\\d+)+$'])
      expect(matcherProblem({ label: 'a', op: '=~', value }), value).toMatch(/exponential/);
    for (const value of ['db-.*', '(web|db)-[0-9]+', '(a|b)+', 'x{2,3}'])
      expect(matcherProblem({ label: 'a', op: '=~', value }), value).toBeNull();
  });
});
