import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

const clients = new WeakMap<NatsConnection, JetStreamClient>();
/** One JetStream context per connection: it is cheap, but there is no reason to build one per publish. */
export function js(nc: NatsConnection): JetStreamClient {
  let c = clients.get(nc);
  if (!c) {
    c = jetstream(nc);
    clients.set(nc, c);
  }
  return c;
}

/** Header values cannot hold CR/LF and should stay small. */
export function headerValue(s: string): string {
  const flat = s.replace(/[\r\n]+/g, ' ');
  return flat.length > 1000 ? `${flat.slice(0, 997)}...` : flat;
}
