import { z } from 'zod';
import { bodyDigest, deployOf, isoTime, jsonOf, nonEmpty, OptStr, rejectedOr, shaped, Str, Unusable, type Delivery, type Parsed } from './common.ts';

/**
 * Argo CD notifications (argocd-notifications' webhook service): the body is whatever the template says, so the
 * README documents the template this receiver reads (trigger name or operation phase, app, revision, URL, finish
 * time). Sync succeeded and sync failed become deploys; other phases (Running) are ignored.
 */
const Notification = z.object({
  event: OptStr,
  trigger: OptStr,
  app: Str.min(1, 'must not be empty'),
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

export function parseArgocd(d: Delivery): Parsed {
  const external_id = bodyDigest(d.body);
  let event = '';
  try {
    const p = shaped(Notification, jsonOf(d.body), 'Argo CD notification');
    const said = (nonEmpty(p.event) ?? nonEmpty(p.trigger) ?? '').toLowerCase();
    const phase = (p.phase ?? '').toLowerCase();
    event = nonEmpty(p.event) ?? nonEmpty(p.trigger) ?? (phase ? `phase ${p.phase}` : '');
    const failed = said.includes('fail') || phase === 'failed' || phase === 'error';
    const succeeded = !failed && (said.includes('succeed') || phase === 'succeeded');
    if (!failed && !succeeded) {
      if (event === '') throw new Unusable('neither event, trigger nor phase says whether the sync succeeded or failed');
      return { kind: 'ignored', event, external_id, reason: `${event} is not recorded (only sync succeeded and sync failed)` };
    }
    const rev = nonEmpty(p.revision) ?? '';
    const detail = nonEmpty(p.message);
    return deployOf(event, external_id, {
      event_type: failed ? 'sync_failed' : 'sync_succeeded',
      summary: failed ? `${p.app}: sync of ${rev || 'the target revision'} failed${detail ? ` (${detail})` : ''}` : `${p.app} synced to ${rev || 'the target revision'}`,
      app: p.app,
      revision: rev,
      url: p.url,
      failed,
      at: isoTime(p.finished_at) ?? d.receivedAt.toISOString(),
    });
  } catch (err) {
    return rejectedOr(err, event, external_id);
  }
}
