import { randomUUID } from 'node:crypto';
import type { DeliveryJob, ReceiverSource } from '../../../contracts/domains/events-records.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { Headers } from '../../../contracts/envelope.ts';
import { publishDurable } from '../../../platform/jetstream.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { parseAlertmanager } from './parse/alertmanager.ts';
import { parseArgocd } from './parse/argocd.ts';
import { clip, type Parsed, type Parser } from './parse/delivery.ts';
import { parseGithub } from './parse/github.ts';
import { parseGitlab } from './parse/gitlab.ts';
import { verifySignature } from './signatures.ts';
import { tokenHash } from './tokens.ts';

const PARSERS: Record<ReceiverSource, Parser> = {
  github: parseGithub,
  gitlab: parseGitlab,
  argocd: parseArgocd,
  alertmanager: parseAlertmanager,
};

/** Headers kept with a rejected delivery: never the credentials. */
const SECRET_HEADERS = new Set(['authorization', 'x-gitlab-token']);
const EXCERPT_BYTES = 4096;

/**
 * The public receivers (`POST /api/v1/webhooks/{source}/{token}`, `POST /api/v1/alerts/webhook/alertmanager/{token}`).
 * In the request: the token (by hash, cached), the signature, the parse; then the delivery is published to JetStream
 * and the answer waits only for that ack. Storing it (and resolving hosts, paging) is the delivery consumer's
 * work, so a slow PostgreSQL never makes a sender time out and retry. Repeats within the stream's duplicate window are
 * stored once (the sender's delivery id is the message id); later ones are dropped by the consumer's unique key.
 */
export function receiveHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.receive': async ({ source, token, headers, body_b64 }, scope) => {
      const receivedAt = new Date(deps.clock.now());
      const body = Buffer.from(body_b64, 'base64');
      const receiver = await deps.receivers.byTokenHash(tokenHash(token));
      const known = receiver !== null && receiver.source === source;
      // The same work for a known and an unknown token: the lookup above, this check, then the answer.
      const signature = verifySignature(source, known ? receiver.secret : null, headers, body);
      if (!known) throw new DomainError('not_found', 'no receiver for this token');

      const job = (parsed: Pick<Parsed, 'event' | 'external_id'>, outcome: DeliveryJob['outcome']): DeliveryJob => ({
        delivery_id: randomUUID(),
        receiver_id: receiver.id,
        client_id: receiver.client_id,
        environment_id: receiver.environment_id,
        source,
        received_at: receivedAt.toISOString(),
        external_id: clip(parsed.external_id, 300),
        event: clip(parsed.event, 200),
        outcome,
      });
      const publish = (j: DeliveryJob) =>
        publishDurable(deps.nc, 'svc.work.events.delivery', j, {
          // A sender's retry of the same delivery (same id, or same body) is stored once.
          msgId: `delivery:${receiver.id}:${j.external_id}`,
          headers: { [Headers.requestId]: scope.ctx.request_id, [Headers.traceparent]: scope.traceparent },
        });
      const keptHeaders = Object.fromEntries(
        Object.entries(headers)
          .filter(([k]) => !SECRET_HEADERS.has(k))
          .map(([k, v]) => [k, clip(v, 500)]),
      );

      if (receiver.secret !== null && !signature.ok) {
        // Nothing of an unverified body is kept: only that it came, and why it was refused.
        const event = headers['x-github-event'] ?? headers['x-gitlab-event'] ?? '';
        await publish(
          job(
            { event, external_id: `unsigned:${randomUUID()}` },
            { kind: 'rejected', rejected: { reason: signature.reason, body_excerpt: '', headers: keptHeaders } },
          ),
        );
        throw new DomainError('unauthorized', signature.reason);
      }

      const parsed = PARSERS[source]({ headers, body, receivedAt });
      switch (parsed.kind) {
        case 'pong':
          return { outcome: 'pong', delivery_id: null, message: 'pong' };
        case 'ignored':
          return { outcome: 'ignored', delivery_id: null, message: parsed.reason };
        case 'rejected': {
          const excerpt = clip(body.subarray(0, EXCERPT_BYTES).toString('utf8'), 8192);
          await publish(
            job(parsed, {
              kind: 'rejected',
              rejected: { reason: clip(parsed.reason, 1000), body_excerpt: excerpt, headers: keptHeaders },
            }),
          );
          throw new DomainError('bad_request', `delivery rejected: ${parsed.reason}`);
        }
        case 'deploy':
        case 'alert': {
          const j = job(
            parsed,
            parsed.kind === 'deploy'
              ? { kind: 'deploy', deploy: parsed.deploy }
              : { kind: 'alert', alert: parsed.alert },
          );
          const ack = await publish(j);
          return ack.duplicate
            ? { outcome: 'duplicate', delivery_id: null, message: 'this delivery was already accepted' }
            : { outcome: 'accepted', delivery_id: j.delivery_id, message: 'accepted' };
        }
      }
    },
  };
}
