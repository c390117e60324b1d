import { ClosedConnectionError, NoRespondersError, RequestError, TimeoutError } from '@nats-io/nats-core';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../contracts/errors.ts';
import { toReplyError } from '../../platform/serve.ts';

describe('the broker unreachable, in the reply', () => {
  it('answers unavailable (503) for nats.js timeouts, lost connections and no responders, also as a cause', () => {
    for (const err of [
      new TimeoutError(),
      new ClosedConnectionError(),
      new NoRespondersError('svc.x'),
      new RequestError('request failed', { cause: new TimeoutError() }),
      new Error('publish failed', { cause: new TimeoutError() }),
    ])
      expect(toReplyError(err).code, err.name).toBe('unavailable');
  });

  it('keeps anything else an internal error, and a domain error as it is', () => {
    expect(toReplyError(new Error('boom')).code).toBe('internal_error');
    expect(toReplyError(new TypeError('x is undefined')).code).toBe('internal_error');
    expect(toReplyError(new DomainError('conflict', 'taken')).code).toBe('conflict');
  });
});
