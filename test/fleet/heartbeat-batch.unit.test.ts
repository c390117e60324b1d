import { describe, expect, it } from 'vitest';
import { latestPerHost, type HeartbeatItem } from '../../actors/fleet/agents/status.ts';
import { Heartbeat } from '../../contracts/domains/agent-telemetry.ts';

const agentA = {
  agent_id: '0b0e8c4e-0000-4000-8000-00000000000a',
  host_id: '1b0e8c4e-0000-4000-8000-00000000000a',
  environment_id: '2b0e8c4e-0000-4000-8000-000000000001',
  client_id: '3b0e8c4e-0000-4000-8000-000000000001',
};
const agentB = { ...agentA, agent_id: agentA.agent_id.replace(/a$/, 'b'), host_id: agentA.host_id.replace(/a$/, 'b') };

const item = (agent: typeof agentA, atMs: number, hb: Record<string, unknown>): HeartbeatItem => ({
  agent,
  at: new Date(atMs),
  hb: Heartbeat.parse({ sent_at: new Date(atMs).toISOString(), agent_version: '1.0.0', ...hb }),
});

describe('a batch of heartbeats, one per host', () => {
  it("keeps each host's latest heartbeat, with the facts of the latest one that sent them", () => {
    const firstA = item(agentA, 1_000, { agent_version: '1.0.0', facts: { hostname: 'a-old', cpu_cores: 2 } });
    const b = item(agentB, 1_500, { agent_version: '2.0.0' });
    const secondA = item(agentA, 2_000, { agent_version: '1.1.0' });
    const latest = latestPerHost([firstA, b, secondA]);
    expect([...latest.keys()]).toEqual([agentA.host_id, agentB.host_id]);
    expect(latest.get(agentA.host_id)).toMatchObject({
      at: new Date(2_000),
      hb: { agent_version: '1.1.0', facts: { hostname: 'a-old', cpu_cores: 2 } },
    });
    expect(latest.get(agentB.host_id)).toBe(b);
  });

  it('takes newer facts over older ones, a later arrival at the same instant over an earlier one, and never an older heartbeat', () => {
    const newer = item(agentA, 2_000, { agent_version: '1.2.0', facts: { hostname: 'a-new' } });
    const older = item(agentA, 1_000, { agent_version: '1.0.0', facts: { hostname: 'a-old' } });
    expect(latestPerHost([newer, older]).get(agentA.host_id)).toBe(newer);
    const sameInstant = item(agentA, 2_000, { agent_version: '1.3.0' });
    expect(latestPerHost([newer, sameInstant]).get(agentA.host_id)).toMatchObject({
      hb: { agent_version: '1.3.0', facts: { hostname: 'a-new' } },
    });
  });
});

describe('a heartbeat’s facts', () => {
  it('refuse a cpu_cores beyond the integer column, which would fail the whole batch it is in', () => {
    const hb = { sent_at: new Date(0).toISOString(), agent_version: '1.0.0', facts: { hostname: 'h' } };
    expect(Heartbeat.safeParse({ ...hb, facts: { hostname: 'h', cpu_cores: 2_147_483_647 } }).success).toBe(true);
    const refused = Heartbeat.safeParse({ ...hb, facts: { hostname: 'h', cpu_cores: 2_147_483_648 } });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.path).toEqual(['facts', 'cpu_cores']);
  });
});
