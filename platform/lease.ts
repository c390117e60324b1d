import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import type { Logger } from './logger.ts';
import { namespace } from './namespace.ts';
import { brokerReplicas } from './replicas.ts';

/**
 * A lease in JetStream KV: at most one holder per name across every instance, however many run. The holder renews it
 * every `ttlMs / 3`; a holder that dies stops renewing and the key expires with the bucket's max age, so another
 * instance takes over within `ttlMs`. Acquire is `create` (fails when the key exists), renewal is a compare-and-swap on
 * the revision, so two instances can never both believe they hold it.
 */
export class Lease {
  private kv: KV | undefined;
  private revision = 0;
  private readonly owner = randomUUID();

  private readonly nc: NatsConnection;
  private readonly name: string;
  private readonly ttlMs: number;
  private readonly log: Logger;
  constructor(nc: NatsConnection, name: string, ttlMs: number, log: Logger) {
    this.nc = nc;
    this.name = name;
    this.ttlMs = ttlMs;
    this.log = log;
  }

  private async bucket(): Promise<KV> {
    const ns = namespace();
    // One bucket per TTL: the bucket's max age is what expires an abandoned lease.
    if (this.kv) return this.kv;
    const name = `svc_leases_${Math.round(this.ttlMs)}${ns ? `_${ns}` : ''}`;
    const kv = await new Kvm(this.nc).create(name, { ttl: this.ttlMs, history: 1, replicas: brokerReplicas() });
    // `create` opens an existing bucket as it is: one made at fewer replicas (before a cluster) is scaled up here.
    const status = await kv.status();
    if (status.replicas < brokerReplicas()) {
      const jsm = await jetstreamManager(this.nc);
      await jsm.streams.update(status.streamInfo.config.name, { num_replicas: brokerReplicas() });
    }
    this.kv = kv;
    return kv;
  }

  /** True when this instance holds the lease now (acquired or renewed by this call). */
  async hold(): Promise<boolean> {
    try {
      const kv = await this.bucket();
      if (this.revision > 0) {
        try {
          this.revision = await kv.update(this.name, this.owner, this.revision);
          return true;
        } catch {
          // Lost it (expired and taken by another instance): fall through and try to take it again.
          this.revision = 0;
        }
      }
      try {
        this.revision = await kv.create(this.name, this.owner);
        this.log.info({ lease: this.name }, 'lease acquired');
        return true;
      } catch {
        return false;
      }
    } catch (err) {
      this.log.warn({ err, lease: this.name }, 'lease check failed');
      this.revision = 0;
      return false;
    }
  }

  /** Gives the lease up at once (clean shutdown), so another instance need not wait for it to expire. */
  async release(): Promise<void> {
    if (this.revision === 0 || !this.kv) return;
    try {
      await this.kv.delete(this.name, { previousSeq: this.revision });
    } catch {
      // Already gone or taken: nothing to give back.
    }
    this.revision = 0;
  }
}
