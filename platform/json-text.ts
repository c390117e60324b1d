/**
 * A reply a handler already holds as JSON text, built by its store (PostgreSQL's `row_to_json`, say), in parts. The
 * host writes the parts into the reply's bytes as they are, inside the envelope, instead of parsing them into objects
 * only to serialize them again. For a large reply that is most of its garbage: a 500-ticket board was ~15,000
 * short-lived objects per request (row objects, their strings, the ticket objects, the serialized copy), enough to
 * make V8 move them into the old generation and collect it every few hundred milliseconds under load. The parts stay
 * small on purpose: a string over ~128 KB (one joined board) is allocated in the old generation, and so is each copy
 * of it, so they are never joined into one string here.
 */
export class JsonText {
  readonly parts: readonly string[];
  constructor(parts: readonly string[]) {
    this.parts = parts;
  }

  /** The UTF-8 bytes of the parts after `prefix` and before `suffix`, written into one buffer. */
  encode(prefix: string, suffix: string): Buffer {
    let length = Buffer.byteLength(prefix) + Buffer.byteLength(suffix);
    for (const p of this.parts) length += Buffer.byteLength(p);
    const out = Buffer.allocUnsafe(length);
    let at = out.write(prefix, 0);
    for (const p of this.parts) at += out.write(p, at);
    out.write(suffix, at);
    return out;
  }

  /** The parts as one value (where replies are validated). */
  parse(): unknown {
    return JSON.parse(this.parts.join(''));
  }
}

/**
 * JSON text in `parts` standing for a reply of type T. Where replies are validated (tests), the host parses it and
 * checks it against the subject's reply schema like any other reply, so the store's JSON is held to the same contract.
 */
export const jsonText = <T>(parts: readonly string[]): T => new JsonText(parts) as unknown as T;
