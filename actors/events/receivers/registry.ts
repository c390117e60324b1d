import type { MikroORM } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { ReceiverChanged, type ReceiverSource } from '../../../contracts/domains/events-records.ts';
import type { Logger } from '../../../platform/logger.ts';
import { wireDurableSubject } from '../../../platform/namespace.ts';
import type { SecretBox } from '../../../platform/secret-box.ts';
import { sql } from '../../../platform/stores/sql.ts';

/** A receiver as the public endpoints need it, with its shared secret opened. */
export interface LiveReceiver {
  id: string;
  kind: 'webhook' | 'alert';
  source: ReceiverSource;
  client_id: string;
  environment_id: string | null;
  secret: string | null;
}

const decoder = new TextDecoder();

/** Stands for a secret that could not be opened: random, so no sender can match it. */
const UNREADABLE_SECRET = `unreadable:${randomBytes(32).toString('hex')}`;

/**
 * Receivers by token hash, cached so a delivery costs no database read: known and unknown tokens alike (an unknown
 * token costs the same lookup as a known one, and a flood of wrong tokens does not reach PostgreSQL). A change or
 * removal is announced on `svc.evt.events.receiver_changed`; every instance listening drops the token at once, and
 * entries expire after `ttlMs` in any case.
 */
export class ReceiverRegistry {
  private readonly cache = new Map<string, { hit: LiveReceiver | null; at: number }>();
  private sub: Subscription | undefined;
  private log: Logger | undefined;

  private readonly orm: MikroORM;
  private readonly box: SecretBox;
  private readonly ttlMs: number;
  constructor(orm: MikroORM, box: SecretBox, ttlMs = 60_000) {
    this.orm = orm;
    this.box = box;
    this.ttlMs = ttlMs;
  }

  async byTokenHash(hash: string): Promise<LiveReceiver | null> {
    const e = this.cache.get(hash);
    if (e && Date.now() - e.at < this.ttlMs) return e.hit;
    const [row] = await sql<{
      id: string;
      kind: 'webhook' | 'alert';
      source: ReceiverSource;
      client_id: string;
      environment_id: string | null;
      secret_enc: string | null;
    }>(
      this.orm.em.fork(),
      `SELECT id, kind, source, client_id, environment_id, secret_enc FROM event_receivers WHERE token_hash = ?`,
      [hash],
    );
    const hit = row
      ? {
          id: row.id,
          kind: row.kind,
          source: row.source,
          client_id: row.client_id,
          environment_id: row.environment_id,
          secret: row.secret_enc ? this.open(row.secret_enc) : null,
        }
      : null;
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(hash, { hit, at: Date.now() });
    return hit;
  }

  /**
   * A secret sealed under another key (the encryption key was changed) cannot be opened: the receiver then refuses every
   * delivery (401, as a wrong signature) until its secret is set again, instead of failing each one with a 500.
   */
  private open(sealed: string): string {
    try {
      return this.box.open(sealed);
    } catch {
      this.log?.warn(
        'a receiver secret cannot be opened with the current key (SVC_EVENTS_ENCRYPTION_KEY changed?): set it again',
      );
      return UNREADABLE_SECRET;
    }
  }

  forget(hashes: readonly string[]): void {
    for (const h of hashes) this.cache.delete(h);
  }

  /** Listens for changes made through any instance (core NATS on the event's subject; no durable state needed). */
  listen(nc: NatsConnection, log: Logger): void {
    this.log = log;
    this.sub = nc.subscribe(wireDurableSubject('svc.evt.events.receiver_changed'), {
      callback: (err, msg) => {
        if (err) return;
        try {
          const parsed = ReceiverChanged.safeParse(JSON.parse(decoder.decode(msg.data)));
          if (parsed.success) this.forget(parsed.data.token_hashes);
        } catch (e) {
          log.warn({ err: e }, 'unreadable receiver_changed message');
        }
      },
    });
  }

  stop(): void {
    this.sub?.unsubscribe();
  }
}
