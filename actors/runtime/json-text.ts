/**
 * A reply a handler already holds as JSON text, built by its store (PostgreSQL's `row_to_json`, say). The host sends
 * the text inside the envelope as it is, instead of parsing it into objects only to serialize them again. For a large
 * reply that is most of its garbage: a 500-ticket board was ~15,000 short-lived objects per request (row objects,
 * their strings, the ticket objects, the serialized copy), enough to make V8 allocate them straight into the old
 * generation and collect it every few hundred milliseconds under load.
 */
export class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * `text` standing for a reply of type T. Where replies are validated (tests), the host parses it and checks it against
 * the subject's reply schema like any other reply, so the store's JSON is held to the same contract.
 */
export const jsonText = <T>(text: string): T => new JsonText(text) as unknown as T;
