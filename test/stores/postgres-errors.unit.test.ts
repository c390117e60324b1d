import { describe, expect, it } from 'vitest';
import { toReplyError } from '../../platform/serve.ts';

/**
 * Issue 7, item 1: PostgreSQL refusals are answered for what they are, centrally, also when they come as the driver's
 * own errors. (Raised by a real PostgreSQL, through MikroORM: postgres-errors.test.ts.)
 */
describe('PostgreSQL refusals in the reply', () => {
  it('maps raw pg errors (not wrapped by MikroORM) the same way', () => {
    const raw = Object.assign(new Error('insert or update violates foreign key constraint'), {
      code: '23503',
      detail: 'Key (team_id)=(0a) is not present in table "teams".',
    });
    expect(toReplyError(new Error('query failed', { cause: raw })).toBody()).toEqual({
      code: 'not_found',
      message: 'team not found',
    });
    expect(toReplyError(Object.assign(new Error('deadlock detected'), { code: '40P01' })).code).toBe('conflict');
    expect(
      toReplyError(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })).code,
    ).toBe('timeout');
  });
});
