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
 * GitLab's webhooks (docs.gitlab.com, "Webhook events"): tag push (`Tag Push Hook`), release (`Release Hook`, action
 * create) and deployment (`Deployment Hook`, status success or failed). GitLab writes times as
 * `2021-04-28 21:50:00 +0200` or `… UTC`.
 */

const Project = z.object({ path_with_namespace: Str, web_url: Str });
const TagPush = z.object({
  object_kind: z.literal('tag_push'),
  ref: Str,
  checkout_sha: OptStr,
  after: OptStr,
  project: Project,
});
const Release = z.object({
  object_kind: z.literal('release'),
  action: Str,
  tag: Str,
  name: OptStr,
  url: OptStr,
  released_at: OptStr,
  created_at: OptStr,
  project: Project,
});
const Deployment = z.object({
  object_kind: z.literal('deployment'),
  status: Str,
  status_changed_at: OptStr,
  environment: Str,
  ref: OptStr,
  short_sha: OptStr,
  commit_url: OptStr,
  deployable_url: OptStr,
  environment_external_url: OptStr,
  project: Project,
});

const KINDS: Record<string, string> = {
  'Tag Push Hook': 'tag_push',
  'Release Hook': 'release',
  'Deployment Hook': 'deployment',
};
const ZERO_SHA = /^0+$/;

export function parseGitlab(d: Delivery): Parsed {
  const header = d.headers['x-gitlab-event'] ?? '';
  const external_id = nonEmpty(d.headers['x-gitlab-event-uuid']) ?? bodyDigest(d.body);
  const received = d.receivedAt.toISOString();
  let event = header;
  try {
    const body = jsonOf(d.body);
    const kind =
      (typeof body === 'object' && body !== null && typeof (body as { object_kind?: unknown }).object_kind === 'string'
        ? (body as { object_kind: string }).object_kind
        : undefined) ?? KINDS[header];
    event = header || kind || '';
    if (kind === undefined) throw new Unusable('neither an X-Gitlab-Event header nor an object_kind says what this is');
    switch (kind) {
      case 'tag_push': {
        const p = shaped(TagPush, body, 'tag push payload');
        const tag = p.ref.replace(/^refs\/tags\//, '');
        if (!nonEmpty(p.checkout_sha) || ZERO_SHA.test(p.after ?? ''))
          return { kind: 'ignored', event, external_id, reason: `tag ${tag} was deleted; deletions are not recorded` };
        return deployOf(event, external_id, {
          event_type: 'tag',
          summary: `${p.project.path_with_namespace}: tag ${tag} pushed`,
          app: p.project.path_with_namespace,
          revision: tag,
          url: `${p.project.web_url}/-/tags/${encodeURIComponent(tag)}`,
          failed: false,
          at: received,
        });
      }
      case 'release': {
        const p = shaped(Release, body, 'release payload');
        if (p.action !== 'create')
          return {
            kind: 'ignored',
            event,
            external_id,
            reason: `release action ${p.action} is not recorded (only create)`,
          };
        return deployOf(event, external_id, {
          event_type: 'release',
          summary: `${p.project.path_with_namespace} released ${nonEmpty(p.name) ?? p.tag}`,
          app: p.project.path_with_namespace,
          revision: p.tag,
          url: p.url,
          failed: false,
          at: isoTime(p.released_at) ?? isoTime(p.created_at) ?? received,
        });
      }
      case 'deployment': {
        const p = shaped(Deployment, body, 'deployment payload');
        const failed = p.status === 'failed';
        if (!failed && p.status !== 'success')
          return {
            kind: 'ignored',
            event,
            external_id,
            reason: `deployment status ${p.status} is not recorded (only success, failed)`,
          };
        const rev = nonEmpty(p.short_sha) ?? nonEmpty(p.ref) ?? '';
        return deployOf(event, external_id, {
          event_type: 'deployment',
          summary: failed
            ? `${p.project.path_with_namespace}: deployment of ${rev} to ${p.environment} failed`
            : `${p.project.path_with_namespace} deployed ${rev} to ${p.environment}`,
          app: p.project.path_with_namespace,
          revision: rev,
          url: nonEmpty(p.deployable_url) ?? p.environment_external_url,
          failed,
          at: isoTime(p.status_changed_at) ?? received,
        });
      }
      default:
        return { kind: 'ignored', event, external_id, reason: `GitLab event ${event || kind} is not recorded` };
    }
  } catch (err) {
    return rejectedOr(err, event, external_id);
  }
}
