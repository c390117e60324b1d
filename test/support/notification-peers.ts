import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * Receivers of notifications, standing in for the products they reach: a webhook endpoint that verifies every delivery
 * with the official `standardwebhooks` library (as a receiver following the specification would), and a chat
 * product's incoming webhook (Slack and Mattermost take `{"text": …}` and answer 200 `ok`).
 */

export interface ReceivedHook {
  path: string;
  id: string;
  timestamp: number;
  /** The Standard Webhooks verification passed with the secret configured for the path. */
  verified: boolean;
  /** Why it failed, when it did. */
  error: string | null;
  body: { type: string; timestamp: string; data: Record<string, unknown> };
  /** When it arrived (ms). */
  at: number;
  status: number;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => resolve(raw));
    req.on('error', reject);
  });

abstract class Peer {
  protected server!: Server;
  port = 0;
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  protected async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }
  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export class WebhookReceiver extends Peer {
  readonly received: ReceivedHook[] = [];
  /** The secrets a path verifies with (its channel's, after creation or rotation). */
  readonly secrets = new Map<string, string>();
  /** Statuses a path answers next, one per delivery (then 200); a `Retry-After` may go with one. */
  readonly script = new Map<string, { status: number; retryAfter?: string }[]>();
  /** How long each answer waits (a slow receiver keeps deliveries in flight). */
  delayMs = 0;
  /** From a path's `count`-th delivery on, answers wait `ms` (deliveries held in flight, whatever the timing). */
  readonly holdAfter = new Map<string, { count: number; ms: number }>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void (async () => {
        const raw = await readBody(req);
        const path = req.url ?? '/';
        const next = this.script.get(path)?.shift() ?? { status: 200 };
        const hold = this.holdAfter.get(path);
        const held = hold !== undefined && this.received.filter((r) => r.path === path).length >= hold.count;
        const headers = {
          'webhook-id': String(req.headers['webhook-id'] ?? ''),
          'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
        };
        let verified = false;
        let error: string | null = null;
        try {
          new Webhook(this.secrets.get(path) ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').verify(raw, headers);
          verified = true;
        } catch (err) {
          error = (err as Error).message;
        }
        this.received.push({
          path,
          id: headers['webhook-id'],
          timestamp: Number(headers['webhook-timestamp']),
          verified,
          error,
          body: JSON.parse(raw) as ReceivedHook['body'],
          at: Date.now(),
          status: next.status,
        });
        const wait = held ? hold.ms : this.delayMs;
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        res.writeHead(next.status, next.retryAfter ? { 'retry-after': next.retryAfter } : {});
        res.end(next.status < 300 ? 'ok' : 'no');
      })();
    });
    await this.listen();
    return this;
  }

  on(path: string): ReceivedHook[] {
    return this.received.filter((r) => r.path === path);
  }
}

export class ChatPeer extends Peer {
  readonly messages: { path: string; text: string; at: number }[] = [];

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void (async () => {
        const raw = await readBody(req);
        let text: unknown;
        try {
          text = (JSON.parse(raw) as { text?: unknown }).text;
        } catch {
          text = undefined;
        }
        // As Slack answers a payload without text.
        if (req.headers['content-type'] !== 'application/json' || typeof text !== 'string' || text === '') {
          res.writeHead(400, { 'content-type': 'text/plain' });
          res.end('no_text');
          return;
        }
        this.messages.push({ path: req.url ?? '/', text, at: Date.now() });
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      })();
    });
    await this.listen();
    return this;
  }

  on(path: string): { text: string; at: number }[] {
    return this.messages.filter((m) => m.path === path);
  }
}
