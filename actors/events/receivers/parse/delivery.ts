import { createHash } from 'node:crypto';
import { z } from 'zod';
import { describeZodError } from '../../../../contracts/errors.ts';
import type { AlertFacts, DeployFacts } from '../../../../contracts/domains/events-records.ts';

/** One delivery as a receiver got it: the headers it reads (lower-case names), the raw body, when it arrived. */
export interface Delivery {
  headers: Record<string, string>;
  body: Buffer;
  receivedAt: Date;
}

/** What a payload means for us. `external_id` makes a repeat recognisable; `event` names what the sender sent. */
export type Parsed =
  | { kind: 'pong'; event: string; external_id: string }
  | { kind: 'ignored'; event: string; external_id: string; reason: string }
  | { kind: 'deploy'; event: string; external_id: string; deploy: DeployFacts }
  | { kind: 'alert'; event: string; external_id: string; alert: AlertFacts }
  | { kind: 'rejected'; event: string; external_id: string; reason: string };

export type Parser = (d: Delivery) => Parsed;

/** A payload we cannot use: the receiver stores it as a rejected delivery with `message` as the reason. */
export class Unusable extends Error {}

export const bodyDigest = (body: Buffer): string => `sha256:${createHash('sha256').update(body).digest('hex')}`;

/** JSON of the body, or Unusable saying why not. */
export function jsonOf(body: Buffer): unknown {
  if (body.length === 0) throw new Unusable('the body is empty');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new Unusable('the body is not JSON');
  }
}

/** `schema` over `value`, or Unusable naming the failing fields. */
export function shaped<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new Unusable(`${what}: ${describeZodError(r.error)}`);
  return r.data;
}

/**
 * A time as senders write it (RFC 3339 with any fraction, GitLab's `2021-04-28 21:50:00 +0200` / `… UTC`) as ISO 8601
 * UTC; undefined for absent, unparseable or "zero" times (Alertmanager's `0001-01-01T00:00:00Z` means "not ended").
 */
export function isoTime(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const ms = Date.parse(value.trim().replace(/ UTC$/, 'Z'));
  if (!Number.isFinite(ms)) return undefined;
  const year = new Date(ms).getUTCFullYear();
  if (year < 1971 || year > 9999) return undefined;
  return new Date(ms).toISOString();
}

/** Cuts a string to `max` characters (on a code-point boundary) and drops NULs, which PostgreSQL text cannot hold. */
export function clip(value: string, max: number): string {
  const clean = value.replaceAll('\u0000', '');
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max);
  // A high surrogate left alone at the end would be half a character.
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** A non-empty string field, loosely: senders leave some out or send null. */
export const Str = z.string().max(100_000);
export const OptStr = z.string().max(100_000).nullish();

/** The string when it has more than blanks, else null (senders leave fields out, send null or ""). */
export const nonEmpty = (s: string | null | undefined): string | null =>
  s !== undefined && s !== null && s.trim() !== '' ? s : null;

/** What a parser says of one deploy, before the fields are cut to what the deploys table holds. */
export interface DeployDraft {
  event_type: DeployFacts['event_type'];
  summary: string;
  app: string;
  revision: string;
  /** Blank or absent: no link. */
  url: string | null | undefined;
  failed: boolean;
  at: string;
}

/** A deploy result, every field clipped to its column's size. */
export function deployOf(event: string, external_id: string, d: DeployDraft): Parsed {
  const url = nonEmpty(d.url);
  return {
    kind: 'deploy',
    event,
    external_id,
    deploy: {
      event_type: d.event_type,
      summary: clip(d.summary, 1000),
      app: clip(d.app, 500),
      revision: clip(d.revision, 500),
      url: url === null ? null : clip(url, 2000),
      failed: d.failed,
      at: d.at,
    },
  };
}

/** The end of every parser: an Unusable payload becomes a rejected delivery; anything else is a bug and goes on. */
export function rejectedOr(err: unknown, event: string, external_id: string): Parsed {
  if (err instanceof Unusable) return { kind: 'rejected', event, external_id, reason: err.message };
  throw err;
}
