import { jetstream, jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { streams } from '../../../contracts/streams.ts';
import { namespace } from '../../../platform/namespace.ts';

const STREAM = streams.SVC_UPLOADS.name;
const CHUNK_BYTES = 256 * 1024;
/** The last message of an upload: the total size in this header (and as its body: an empty body would read as a status message). */
const END_HEADER = 'Svc-Upload-End';

/**
 * Files on their way from a gateway to an actor (service-desk attachments), in the SVC_UPLOADS stream: written and read
 * in 256 KB chunks on `svc.upload.<ns>.<id>`, so neither side holds a whole file in memory and no file is one oversized
 * broker message. The gateway streams an upload in (each chunk acknowledged before the next is read), the actor
 * streams it out to where it goes and purges it; what nobody picks up expires with the stream's max age.
 */
export class UploadStore {
  private readonly nc: () => NatsConnection | Promise<NatsConnection>;
  constructor(nc: () => NatsConnection | Promise<NatsConnection>) {
    this.nc = nc;
  }

  /** Where the uploads travel (for whoever asks: the upload ticket names it). */
  get bucket(): string {
    return STREAM;
  }

  private subject(id: string): string {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw new Error('upload ids are 1-64 letters, digits, _ or -');
    return `svc.upload.${namespace() || '_'}.${id}`;
  }

  /** Stores `data` under `id` and returns its size. A source that fails leaves nothing behind. */
  async put(id: string, data: ReadableStream<Uint8Array>, meta: Record<string, string> = {}): Promise<number> {
    const js = jetstream(await this.nc());
    const subject = this.subject(id);
    const reader = data.getReader();
    let size = 0;
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const flush = async (): Promise<void> => {
      if (pendingBytes === 0) return;
      const chunk = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      // Each chunk is acknowledged by the stream before more is read: the sender is paced by the broker.
      await js.publish(subject, chunk);
    };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        size += value.byteLength;
        let rest = value;
        while (rest.byteLength > 0) {
          const take = Math.min(rest.byteLength, CHUNK_BYTES - pendingBytes);
          pending.push(rest.subarray(0, take));
          pendingBytes += take;
          rest = rest.subarray(take);
          if (pendingBytes === CHUNK_BYTES) await flush();
        }
      }
      await flush();
      const h = natsHeaders();
      h.set(END_HEADER, String(size));
      for (const [k, v] of Object.entries(meta))
        h.set(`Svc-Upload-${k.replace(/[^A-Za-z0-9-]/g, '-')}`, encodeURIComponent(v));
      await js.publish(subject, new TextEncoder().encode(JSON.stringify({ size })), { headers: h });
      return size;
    } catch (err) {
      await reader.cancel().catch(() => undefined);
      await this.delete(id);
      throw err;
    }
  }

  /** The stored bytes as a stream, with the size; undefined when there is no complete upload under `id`. */
  async open(id: string): Promise<{ data: ReadableStream<Uint8Array>; size: number } | undefined> {
    const nc = await this.nc();
    const subject = this.subject(id);
    let size: number;
    try {
      const last = await (await jetstreamManager(nc)).streams.getMessage(STREAM, { last_by_subj: subject });
      const end = last?.header.get(END_HEADER);
      if (!last || !end) return undefined;
      size = Number(end);
    } catch (err) {
      if (err instanceof JetStreamApiError) return undefined;
      throw err;
    }
    // One filter as a string: servers before 2.10 know only the single `filter_subject`.
    const consumer = await jetstream(nc).consumers.get(STREAM, { filter_subjects: subject });
    const messages = await consumer.consume({ max_messages: 8 });
    const it = messages[Symbol.asyncIterator]();
    let read = 0;
    const data = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value: m, done } = await it.next();
        if (done) {
          controller.error(new Error('upload stream ended early'));
          return;
        }
        if (m.headers?.get(END_HEADER)) {
          if (read !== size) controller.error(new Error(`upload incomplete: ${read} of ${size} bytes`));
          else controller.close();
          // Not awaited: closing waits for the consumer's pending pull to end, which the reader need not wait for.
          void messages.close().catch(() => undefined);
          return;
        }
        read += m.data.byteLength;
        controller.enqueue(m.data);
      },
      cancel() {
        void messages.close().catch(() => undefined);
      },
    });
    return { data, size };
  }

  /** Drops an upload (used, refused or abandoned). */
  async delete(id: string): Promise<void> {
    try {
      await (await jetstreamManager(await this.nc())).streams.purge(STREAM, { filter: this.subject(id) });
    } catch {
      // Gone already, or the broker is away: the stream's max age removes it.
    }
  }
}
