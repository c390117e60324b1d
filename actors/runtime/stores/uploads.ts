import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { namespace } from '../namespace.ts';

/** An upload no actor picked up (a gateway or actor died mid-way) is gone after this long. */
const UPLOAD_TTL_MS = 60 * 60_000;

/**
 * Files on their way from a gateway to an actor (service-desk attachments): a JetStream object store, written and read
 * in chunks, so neither side holds a whole file in memory and a file is never one oversized broker message. The
 * gateway streams the upload in, the actor streams it out to where it goes and deletes it.
 */
export class UploadStore {
  private os: Promise<ObjectStore> | undefined;

  constructor(private readonly nc: () => NatsConnection | Promise<NatsConnection>) {}

  get bucket(): string {
    const ns = namespace();
    return `svc_uploads${ns ? `_${ns}` : ''}`;
  }

  private store(): Promise<ObjectStore> {
    this.os ??= (async () => new Objm(await this.nc()).create(this.bucket, { ttl: UPLOAD_TTL_MS * 1_000_000, description: 'uploads between gateways and actors' }))();
    this.os.catch(() => (this.os = undefined));
    return this.os;
  }

  /** Stores `data` under `name`; the size stored. */
  async put(name: string, data: ReadableStream<Uint8Array>, meta: Record<string, string> = {}): Promise<number> {
    const info = await (await this.store()).put({ name, metadata: meta }, data);
    return info.size;
  }

  /** The stored bytes as a stream with the object's size and metadata, or undefined when there is no such upload. */
  async open(name: string): Promise<{ data: ReadableStream<Uint8Array>; size: number; meta: Record<string, string>; error: Promise<Error | null> } | undefined> {
    const r = await (await this.store()).get(name);
    if (!r) return undefined;
    return { data: r.data, size: r.info.size, meta: r.info.metadata ?? {}, error: r.error };
  }

  async delete(name: string): Promise<void> {
    try {
      await (await this.store()).delete(name);
    } catch {
      // Already gone (or expired): nothing to clean.
    }
  }
}
