import type { EmailSend } from '../../../contracts/streams.ts';
import type { ChannelRow, MessagePayload, NotificationRow } from './rows.ts';

/**
 * What each channel receives. The message is fixed when a delivery is made (MessagePayload, stored with it); these
 * turn it into each channel's wire form: a Standard Webhooks event (`type`, `timestamp`, `data`), an incoming-webhook
 * chat message (`text`, which Slack and Mattermost both take), or an e-mail.
 */

export type MessageKind = 'firing' | 'repeat' | 'escalation' | 'resolved';

const TYPES: Record<MessageKind, string> = {
  firing: 'notification.firing',
  repeat: 'notification.repeated',
  escalation: 'notification.escalated',
  resolved: 'notification.resolved',
};

export function notificationMessage(
  n: NotificationRow,
  kind: MessageKind,
  at: Date,
  acknowledgeUrl: string | null,
  /** How it ended, when the cause says (an invoice approved by a reviewer). */
  outcome?: string,
): MessagePayload {
  const lead =
    kind === 'resolved'
      ? `Resolved: ${n.title}${outcome ? ` (${outcome})` : ''}`
      : kind === 'escalation'
        ? `Escalated (step ${n.step + 1}, not acknowledged): ${n.title}`
        : kind === 'repeat'
          ? `Still happening (${n.count} times): ${n.title}`
          : n.title;
  return {
    type: TYPES[kind],
    title: lead,
    text: `[${n.severity}] ${lead}`,
    severity: n.severity,
    status: kind === 'resolved' ? 'resolved' : 'firing',
    client_id: n.client_id,
    environment_id: n.environment_id,
    host_id: n.host_id,
    notification_id: n.id,
    rule_id: n.rule_id,
    count: n.count,
    step: n.step,
    at: at.toISOString(),
    acknowledge_url: kind === 'resolved' ? null : acknowledgeUrl,
  };
}

export function testMessage(channel: ChannelRow, at: Date): MessagePayload {
  const title = `Test notification for the channel “${channel.name}”`;
  return {
    type: 'notification.test',
    title,
    text: `[info] ${title}: it reaches you.`,
    severity: 'info',
    status: 'test',
    client_id: channel.client_id,
    environment_id: null,
    host_id: null,
    notification_id: null,
    rule_id: null,
    count: 1,
    step: 0,
    at: at.toISOString(),
    acknowledge_url: null,
  };
}

/** The Standard Webhooks body: the event's type, when it happened, and its data. */
export function webhookBody(p: MessagePayload): string {
  const { type, at, ...data } = p;
  return JSON.stringify({ type, timestamp: at, data: { ...data, at } });
}

/** The chat message: one line of text, the acknowledgement link on its own line (both products link bare URLs). */
export function chatBody(p: MessagePayload): string {
  return JSON.stringify({ text: p.acknowledge_url ? `${p.text}\nAcknowledge: ${p.acknowledge_url}` : p.text });
}

export function emailOf(p: MessagePayload, to: string): EmailSend {
  const lines = [
    p.text,
    '',
    `When: ${p.at}`,
    ...(p.count > 1 ? [`Seen ${p.count} times.`] : []),
    ...(p.acknowledge_url ? ['', `Acknowledge it (this stops the escalation): ${p.acknowledge_url}`] : []),
  ];
  return { to, subject: p.title.slice(0, 200), text: lines.join('\n'), kind: 'notification' };
}
