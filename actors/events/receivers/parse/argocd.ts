import { z } from 'zod';
import {
  bodyDigest,
  deployOf,
  isoTime,
  jsonOf,
  nonEmpty,
  OptStr,
  rejectedOr,
  shaped,
  Unusable,
  type Delivery,
  type Parsed,
} from './delivery.ts';

/**
 * Argo CD notifications (argocd-notifications' webhook service): the body is whatever the template says, so
 * docs/api/events.md documents the template this receiver reads (operation phase, app, revision, URL, finish time). Sync succeeded
 * and sync failed become deploys; other phases (Running) are ignored. Templates written by users are read leniently:
 * Go's text/template prints `<no value>` for a variable the notification does not have (a running sync's
 * `finishedAt`, a `{{.trigger}}` that Argo CD never defines), which counts as absent, like a field left out.
 */
const Notification = z.object({
  event: OptStr,
  trigger: OptStr,
  app: OptStr,
  project: OptStr,
  revision: OptStr,
  phase: OptStr,
  sync_status: OptStr,
  health_status: OptStr,
  message: OptStr,
  finished_at: OptStr,
  url: OptStr,
  repo_url: OptStr,
});

/** What Go's text/template prints for a missing value. */
const NO_VALUE = '<no value>';

/** The field's text when the template gave it one. */
const given = (s: string | null | undefined): string | null => {
  const v = nonEmpty(s);
  return v === null || v.trim() === NO_VALUE ? null : v;
};

/** A link only when it is one: `{{.context.argocdUrl}}/…` without the context key renders `<no value>/…`. */
function httpUrl(s: string | null): string | null {
  if (s === null || !URL.canParse(s)) return null;
  return ['http:', 'https:'].includes(new URL(s).protocol) ? s : null;
}

export function parseArgocd(d: Delivery): Parsed {
  const external_id = bodyDigest(d.body);
  let event = '';
  try {
    const p = shaped(Notification, jsonOf(d.body), 'Argo CD notification');
    const phase = given(p.phase);
    const named = given(p.event) ?? given(p.trigger);
    event = named ?? (phase ? `phase ${phase}` : '');
    const app = given(p.app);
    if (app === null)
      throw new Unusable(
        'Argo CD notification: app: the application name is missing (render it with {{.app.metadata.name | toJson}})',
      );
    const said = (named ?? '').toLowerCase();
    const failed = said.includes('fail') || phase?.toLowerCase() === 'failed' || phase?.toLowerCase() === 'error';
    const succeeded = !failed && (said.includes('succeed') || phase?.toLowerCase() === 'succeeded');
    if (!failed && !succeeded) {
      if (event === '')
        throw new Unusable('neither event, trigger nor phase says whether the sync succeeded or failed');
      return {
        kind: 'ignored',
        event,
        external_id,
        reason: `${event} is not recorded (only sync succeeded and sync failed)`,
      };
    }
    const rev = given(p.revision) ?? '';
    const detail = given(p.message);
    return deployOf(event, external_id, {
      event_type: failed ? 'sync_failed' : 'sync_succeeded',
      summary: failed
        ? `${app}: sync of ${rev || 'the target revision'} failed${detail ? ` (${detail})` : ''}`
        : `${app} synced to ${rev || 'the target revision'}`,
      app,
      revision: rev,
      url: httpUrl(given(p.url)),
      failed,
      at: isoTime(given(p.finished_at)) ?? d.receivedAt.toISOString(),
    });
  } catch (err) {
    return rejectedOr(err, event, external_id);
  }
}
