import { z } from 'zod';
import type { AlertItem } from '../../../../contracts/domains/events-records.ts';
import {
  bodyDigest,
  clip,
  isoTime,
  jsonOf,
  nonEmpty,
  rejectedOr,
  shaped,
  Str,
  Unusable,
  type Delivery,
  type Parsed,
} from './delivery.ts';

/**
 * Prometheus Alertmanager's webhook (`webhook_config`, payload version 4): one notification per alert group, firing or
 * resolved, with the group's key, labels and its alerts. A group becomes one alert group of ours, found again by
 * (source, groupKey) on every repeat:
 * - name: `alertname` of the common labels, else of the group labels, else of the first alert, else the group key;
 * - severity: the common `severity` label, else the most severe of the alerts' (critical > high/error > warning >
 *   info > others), else `unknown`;
 * - fired_at: the earliest `startsAt`; resolved_at (when resolved): the latest `endsAt`, null when none is given;
 * - the host: `host_id` labels first, then `instance` (port removed) and `hostname` labels, resolved by the consumer.
 */

const Labels = z.record(z.string(), z.string());
const Alert = z.object({
  status: z.enum(['firing', 'resolved']),
  labels: Labels,
  annotations: Labels.default({}),
  startsAt: z.string().optional(),
  endsAt: z.string().optional(),
  fingerprint: z.string().optional(),
});
const Notification = z.object({
  version: z.string().optional(),
  groupKey: Str.min(1, 'must not be empty').max(2000),
  status: z.enum(['firing', 'resolved']),
  groupLabels: Labels.default({}),
  commonLabels: Labels.default({}),
  commonAnnotations: Labels.default({}),
  externalURL: z.string().optional(),
  alerts: z.array(Alert).min(1, 'a notification has at least one alert'),
});

const RANK: Record<string, number> = { critical: 5, high: 4, error: 4, warning: 3, info: 2 };
const rank = (s: string): number => RANK[s.toLowerCase()] ?? 1;

/** `instance` without its port: `10.0.0.5:9100` → `10.0.0.5`, `[::1]:9100` → `::1`; a bare IPv6 address stays. */
export function instanceHost(instance: string): string {
  const v = instance.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(v);
  if (bracketed) return bracketed[1]!;
  if ((v.match(/:/g) ?? []).length === 1) return v.replace(/:\d+$/, '');
  return v;
}

const uniq = (xs: string[]): string[] => [...new Set(xs.filter((x) => x.length > 0))];

export function parseAlertmanager(d: Delivery): Parsed {
  const external_id = bodyDigest(d.body);
  let event = '';
  try {
    const body = jsonOf(d.body);
    const p = shaped(Notification, body, 'Alertmanager notification');
    event = p.status;
    if (p.version !== undefined && p.version !== '4')
      throw new Unusable(`webhook payload version ${p.version} is not supported (version 4 is)`);
    const all = [p.commonLabels, ...p.alerts.map((a) => a.labels)];
    const name = p.commonLabels.alertname ?? p.groupLabels.alertname ?? p.alerts[0]!.labels.alertname ?? p.groupKey;
    const severities = uniq(p.alerts.map((a) => a.labels.severity ?? ''));
    const severity =
      nonEmpty(p.commonLabels.severity) ??
      (severities.length > 0 ? severities.sort((a, b) => rank(b) - rank(a))[0]! : 'unknown');
    // The key identifies the group on every repeat; NULs (which PostgreSQL text cannot hold) are dropped from it.
    const group_key = clip(p.groupKey, 2000);
    if (group_key === '') throw new Unusable('groupKey: must not be empty');
    const starts = p.alerts.map((a) => isoTime(a.startsAt)).filter((t): t is string => t !== undefined);
    const ends = p.alerts.map((a) => isoTime(a.endsAt)).filter((t): t is string => t !== undefined);
    const fired_at = starts.length > 0 ? starts.sort()[0]! : d.receivedAt.toISOString();
    const resolved_at = p.status === 'resolved' && ends.length > 0 ? ends.sort().at(-1)! : null;
    const alerts: AlertItem[] = p.alerts.slice(0, 100).map((a) => ({
      status: a.status,
      labels: Object.fromEntries(
        Object.entries(a.labels)
          .slice(0, 50)
          .map(([k, v]) => [clip(k, 200), clip(v, 1000)]),
      ),
      annotations: Object.fromEntries(
        Object.entries(a.annotations)
          .slice(0, 20)
          .map(([k, v]) => [clip(k, 200), clip(v, 2000)]),
      ),
      starts_at: isoTime(a.startsAt) ?? null,
      ends_at: isoTime(a.endsAt) ?? null,
      fingerprint: a.fingerprint ? clip(a.fingerprint, 128) : null,
    }));
    return {
      kind: 'alert',
      event,
      external_id,
      alert: {
        group_key,
        status: p.status,
        name: clip(name, 500),
        // A severity label of blanks or NULs only says nothing: the group's severity must not be empty.
        severity: nonEmpty(clip(severity, 64)) ?? 'unknown',
        fired_at,
        resolved_at,
        host_ids: uniq(all.map((l) => l.host_id ?? ''))
          .slice(0, 100)
          .map((h) => clip(h, 64)),
        host_names: uniq(all.flatMap((l) => [l.instance ? instanceHost(l.instance) : '', l.hostname ?? '']))
          .slice(0, 100)
          .map((h) => clip(h, 255)),
        alerts,
        external_url: p.externalURL ? clip(p.externalURL, 2000) : null,
      },
    };
  } catch (err) {
    return rejectedOr(err, event, external_id);
  }
}
