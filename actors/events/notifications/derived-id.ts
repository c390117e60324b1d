import { createHash } from 'node:crypto';

/** A UUID (version 8, RFC 9562's custom form) fixed by a text: the same text gives the same id. */
export function derivedId(text: string): string {
  const h = createHash('sha256').update(text).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
