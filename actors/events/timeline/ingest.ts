import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { TimelineEventType } from '../../../contracts/domains/events-charts.ts';
import { AlertGroupChanged, DeployRecorded } from '../../../contracts/domains/events-records.ts';
import { AgentStatusChanged, FileChanged } from '../../../contracts/domains/fleet-agents.ts';
import { streams, type EventSubject } from '../../../contracts/streams.ts';
import { runConsumer, type ConsumerHandle, type DeliveryMeta } from '../../../platform/jetstream.ts';
import { sqlStateOf } from '../../../platform/store-errors.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps } from '../deps.ts';

/** One row of the timeline, made from one event. */
interface TimelineRow {
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  event_type: TimelineEventType;
  timestamp: string;
  title: string;
  description: string;
}

const cut = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

function fromAgentStatus(e: AgentStatusChanged): TimelineRow {
  return {
    client_id: e.client_id,
    environment_id: e.environment_id,
    host_id: e.host_id,
    event_type: 'agent_status',
    timestamp: e.at,
    title: `${e.hostname} went ${e.status}`,
    description: `The agent of ${e.hostname} went from ${e.previous} to ${e.status}.`,
  };
}

function fromFileChange(e: FileChanged): TimelineRow {
  const facts = [
    e.size_bytes !== null ? `${e.size_bytes} bytes` : '',
    e.sensitive ? 'sensitive file: content not hashed' : e.sha256 ? `sha256 ${e.sha256}` : '',
  ].filter(Boolean);
  return {
    client_id: e.client_id,
    environment_id: e.environment_id,
    host_id: e.host_id,
    event_type: 'file_change',
    timestamp: e.time,
    title: cut(`${e.path} ${e.change}`, 500),
    description: cut(
      `${e.path} was ${e.change} on ${e.hostname}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}.`,
      2000,
    ),
  };
}

function fromDeploy(e: DeployRecorded): TimelineRow {
  return {
    client_id: e.client_id,
    environment_id: e.environment_id,
    host_id: null,
    event_type: 'deploy',
    timestamp: e.at,
    title: cut(e.summary, 500),
    description: cut(
      `${e.source} ${e.event_type}${e.failed ? ' (failed)' : ''}: ${e.app}${e.revision ? ` at ${e.revision}` : ''}${e.url ? ` — ${e.url}` : ''}`,
      2000,
    ),
  };
}

function fromAlert(e: AlertGroupChanged): TimelineRow {
  return {
    client_id: e.client_id,
    environment_id: e.environment_id,
    host_id: e.host_id,
    event_type: 'alert',
    timestamp: e.at,
    title: cut(`Alert ${e.name} ${e.change}`, 500),
    description: cut(
      `${e.name} (severity ${e.severity}) ${e.change}${e.by ? ` by ${e.by}` : ''}; fired at ${e.fired_at}${e.resolved_at ? `, resolved at ${e.resolved_at}` : ''}.`,
      2000,
    ),
  };
}

/**
 * One durable consumer per event the timeline shows. Each event becomes one row, keyed by the event's message id
 * (or its stream position): a redelivered event is stored once. An event of a client, environment or host deleted
 * meanwhile is dropped (its foreign key refuses it).
 */
function timelineConsumer<T>(
  deps: EventsDeps,
  durable: string,
  subject: EventSubject,
  schema: z.ZodType<T>,
  toRow: (e: T) => TimelineRow,
): Promise<ConsumerHandle> {
  return runConsumer<T>({
    nc: deps.nc,
    stream: streams.SVC_EVENTS.name,
    durable,
    filterSubjects: [subject],
    schema,
    concurrency: 8,
    maxAckPending: 5_000,
    maxDeliver: 8,
    backoffMs: [500, 2_000, 10_000, 30_000],
    log: deps.log,
    handler: async (e: T, meta: DeliveryMeta) => {
      const r = toRow(e);
      const key = `${subject}:${meta.msgId ?? `seq:${meta.streamSequence}`}`;
      try {
        await sql(
          deps.orm.em.fork(),
          `INSERT INTO timeline_events (id, source_key, client_id, environment_id, host_id, event_type, "timestamp", title, description) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (source_key) DO NOTHING`,
          [
            randomUUID(),
            key,
            r.client_id,
            r.environment_id,
            r.host_id,
            r.event_type,
            r.timestamp,
            r.title,
            r.description,
          ],
        );
      } catch (err) {
        if (sqlStateOf(err) === '23503') {
          // meta.log carries the message's subject already.
          meta.log.debug('timeline event dropped: its client, environment or host was deleted');
          return;
        }
        throw err;
      }
    },
  });
}

export async function startTimelineIngest(deps: EventsDeps): Promise<ConsumerHandle[]> {
  return [
    await timelineConsumer(
      deps,
      'events-timeline-agent-status',
      'svc.evt.fleet.agent_status',
      AgentStatusChanged,
      fromAgentStatus,
    ),
    await timelineConsumer(
      deps,
      'events-timeline-file-change',
      'svc.evt.fleet.file_change',
      FileChanged,
      fromFileChange,
    ),
    await timelineConsumer(deps, 'events-timeline-deploy', 'svc.evt.events.deploy', DeployRecorded, fromDeploy),
    await timelineConsumer(deps, 'events-timeline-alert', 'svc.evt.events.alert', AlertGroupChanged, fromAlert),
  ];
}
