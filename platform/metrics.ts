import { Counter, Registry } from 'prom-client';

/**
 * Metrics of the runtime itself (not of one gateway's HTTP traffic), one registry per process. The gateways' `/metrics`
 * serve it beside their own, when debug endpoints are enabled.
 */
export const runtimeMetrics = new Registry();

/**
 * Messages a durable consumer gave up on, by durable and reason: alert on any increase, above all for
 * `identity-audit-store` (an audit entry that is not in the audit log until its dead letter is replayed).
 * No subject label: telemetry subjects carry the agent id, one series per agent.
 */
export const deadLetters = new Counter({
  name: 'svc_dead_letters_total',
  help: 'Messages dead-lettered by durable consumers (svc.dlq.<durable>), by durable and reason',
  labelNames: ['durable', 'reason'] as const,
  registers: [runtimeMetrics],
});

/** Agent requests left unanswered because their reply subject was not the agent's own: alert on any increase. */
export const agentRepliesRefused = new Counter({
  name: 'svc_agent_replies_refused_total',
  help: 'Agent requests not answered because their reply subject lay outside the agent itself',
  registers: [runtimeMetrics],
});
