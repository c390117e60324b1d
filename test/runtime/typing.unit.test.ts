import type { NatsConnection } from '@nats-io/transport-node';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Caller } from '../../platform/call.ts';
import { publishEvent } from '../../platform/jetstream.ts';
import type { ActorHost } from '../../platform/serve.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import type { CallerContext } from '../../contracts/context.ts';
import type { ResolvedUser } from '../../contracts/domains/access.ts';
import type { GatewayApp } from '../../gateway/shared/app.ts';
import { bridge, type GatewayDeps } from '../../gateway/shared/bridge.ts';

/**
 * The catalogue is the type of the wire: `npm run typecheck` (tsc over test/ too) fails when any line marked
 * `@ts-expect-error` below compiles, i.e. when a wrong subject or payload would no longer be a compile error.
 * The function is never run; the test only keeps it referenced.
 */
function wrongPayloadsDoNotCompile(
  caller: Caller<SystemCatalogue>,
  host: ActorHost<SystemCatalogue>,
  app: GatewayApp,
  deps: GatewayDeps,
  nc: NatsConnection,
  ctx: CallerContext,
): void {
  // The right shapes compile, and the reply is typed from the catalogue.
  const resolved = caller.call('svc.identity.access.resolve', { user_id: '00000000-0000-0000-0000-000000000001' }, ctx);
  expectTypeOf(resolved).resolves.toEqualTypeOf<ResolvedUser>();

  // @ts-expect-error a subject that is not in the catalogue
  void caller.call('svc.identity.access.nope', {}, ctx);
  // @ts-expect-error a misspelt field
  void caller.call('svc.identity.access.resolve', { userId: 'x' }, ctx);
  // @ts-expect-error a field of the wrong type
  void caller.call('svc.identity.access.resolve', { user_id: 42 }, ctx);
  // @ts-expect-error a field the request does not have
  void caller.call('svc.identity.access.resolve', { user_id: 'x', admin: true }, ctx);

  void host.serve('invoice', 'typing', {
    'svc.invoice.health': async (input) => {
      expectTypeOf(input).toEqualTypeOf<Record<string, never>>();
      return { analytics_store: 'ok' };
    },
  });
  void host.serve('invoice', 'typing', {
    // @ts-expect-error a reply that breaks the subject's reply schema
    'svc.invoice.health': async () => ({ analytics: 'ok' }),
  });
  void host.serve('invoice', 'typing', {
    // @ts-expect-error a subject of another domain cannot be served in this domain's queue group
    'svc.identity.access.resolve': async () => {
      throw new Error('never');
    },
  });

  bridge(app, deps, {
    method: 'GET',
    url: '/typing',
    subject: 'svc.identity.access.resolve',
    auth: 'public',
    // @ts-expect-error a route must build the subject's request
    input: () => ({ user: 'x' }),
  });

  // @ts-expect-error an event payload that breaks its schema
  void publishEvent(nc, 'svc.evt.access.invalidated', { everyone: true });
}

describe('typed wire', () => {
  it('keeps wrong subjects and payloads compile errors (checked by tsc, see above)', () => {
    expect(typeof wrongPayloadsDoNotCompile).toBe('function');
  });
});
