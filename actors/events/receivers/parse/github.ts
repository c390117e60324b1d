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
  Str,
  Unusable,
  type Delivery,
  type Parsed,
} from './delivery.ts';

/**
 * GitHub's webhooks (docs.github.com, "Webhook events and payloads"): `release` (published), `create` (a tag),
 * `deployment_status` (success, failure, error); `ping` is answered. Bodies come as `application/json` or as the form
 * field `payload` (`application/x-www-form-urlencoded`); the signature is over the raw body either way.
 */

const Repository = z.object({ full_name: Str, html_url: Str });
const Release = z.object({
  action: Str,
  release: z.object({
    tag_name: Str,
    name: OptStr,
    html_url: OptStr,
    published_at: OptStr,
    created_at: OptStr,
    target_commitish: OptStr,
  }),
  repository: Repository,
});
const Create = z.object({ ref: Str, ref_type: Str, repository: Repository });
const DeploymentStatus = z.object({
  deployment_status: z.object({
    state: Str,
    environment: OptStr,
    target_url: OptStr,
    environment_url: OptStr,
    log_url: OptStr,
    description: OptStr,
    created_at: OptStr,
    updated_at: OptStr,
  }),
  deployment: z.object({ sha: Str, ref: OptStr, environment: OptStr, task: OptStr }),
  repository: Repository,
});

function payloadOf(d: Delivery): unknown {
  const type = (d.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    const payload = new URLSearchParams(d.body.toString('utf8')).get('payload');
    if (payload === null) throw new Unusable('the form body has no payload field');
    return jsonOf(Buffer.from(payload, 'utf8'));
  }
  return jsonOf(d.body);
}

export function parseGithub(d: Delivery): Parsed {
  const event = d.headers['x-github-event'] ?? '';
  const external_id = nonEmpty(d.headers['x-github-delivery']) ?? bodyDigest(d.body);
  if (event === '') return { kind: 'rejected', event: '', external_id, reason: 'the X-GitHub-Event header is missing' };
  const received = d.receivedAt.toISOString();
  try {
    const body = payloadOf(d);
    switch (event) {
      case 'ping':
        return { kind: 'pong', event, external_id };
      case 'release': {
        const p = shaped(Release, body, 'release payload');
        if (p.action !== 'published')
          return {
            kind: 'ignored',
            event,
            external_id,
            reason: `release action ${p.action} is not recorded (only published)`,
          };
        const r = p.release;
        return deployOf(event, external_id, {
          event_type: 'release',
          summary: `${p.repository.full_name} released ${nonEmpty(r.name) ?? r.tag_name}`,
          app: p.repository.full_name,
          revision: r.tag_name,
          url: r.html_url,
          failed: false,
          at: isoTime(r.published_at) ?? isoTime(r.created_at) ?? received,
        });
      }
      case 'create': {
        const p = shaped(Create, body, 'create payload');
        if (p.ref_type !== 'tag')
          return { kind: 'ignored', event, external_id, reason: `a created ${p.ref_type} is not recorded (only tags)` };
        return deployOf(event, external_id, {
          event_type: 'tag',
          summary: `${p.repository.full_name}: tag ${p.ref} created`,
          app: p.repository.full_name,
          revision: p.ref,
          url: `${p.repository.html_url}/releases/tag/${encodeURIComponent(p.ref)}`,
          failed: false,
          at: received,
        });
      }
      case 'deployment_status': {
        const p = shaped(DeploymentStatus, body, 'deployment_status payload');
        const s = p.deployment_status;
        const failed = s.state === 'failure' || s.state === 'error';
        if (!failed && s.state !== 'success')
          return {
            kind: 'ignored',
            event,
            external_id,
            reason: `deployment state ${s.state} is not recorded (only success, failure, error)`,
          };
        const env = nonEmpty(s.environment) ?? nonEmpty(p.deployment.environment) ?? 'an environment';
        const ref = nonEmpty(p.deployment.ref) ?? p.deployment.sha.slice(0, 12);
        return deployOf(event, external_id, {
          event_type: 'deployment',
          summary: failed
            ? `${p.repository.full_name}: deployment of ${ref} to ${env} failed`
            : `${p.repository.full_name} deployed ${ref} to ${env}`,
          app: p.repository.full_name,
          revision: p.deployment.sha,
          url: nonEmpty(s.log_url) ?? nonEmpty(s.target_url) ?? s.environment_url,
          failed,
          at: isoTime(s.updated_at) ?? isoTime(s.created_at) ?? received,
        });
      }
      default:
        return { kind: 'ignored', event, external_id, reason: `GitHub event ${event} is not recorded` };
    }
  } catch (err) {
    return rejectedOr(err, event, external_id);
  }
}
