import { createUser as createNkey } from '@nats-io/nkeys';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, startAdminSystem } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import { errorOf, type TestSystem } from '../support/system.ts';

/**
 * Agent enrolment on a deployment that cannot issue broker credentials (no SVC_NATS_ISSUER_KEY): authentication
 * comes first. A caller who has not proved an enrolment challenge gets the 401 of any failed enrolment; only an agent
 * whose signed challenge verifies learns (503) that credentials cannot be issued, and nothing of its enrolment is used up.
 */

let sys: TestSystem;
let root: string;
let envId: string;
const encoder = new TextEncoder();

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem({ SVC_NATS_ISSUER_KEY: undefined }));
  const clientId = (await createClient(sys)).id;
  envId = randomUUID();
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [
    envId,
    clientId,
    'Production',
    `prod-${envId.slice(0, 8)}`,
  ]);
});
afterAll(() => sys?.stop());

const complete = (payload: Record<string, unknown>) =>
  sys.http({ method: 'POST', url: '/api/v1/agents/enroll/complete', payload });

async function started(): Promise<{ agent_id: string; challenge: string; sign: (c: string) => string; token: string }> {
  const created = await api(sys, { token: root })('POST', `/api/v1/environments/${envId}/install-tokens`, {});
  expectStatus(created, 201);
  const token = (created.json() as { data: { token: string } }).data.token;
  const kp = createNkey();
  const start = await sys.http({
    method: 'POST',
    url: '/api/v1/agents/enroll',
    payload: { install_token: token, public_key: kp.getPublicKey(), hostname: 'web-1', os: 'debian', arch: 'x86_64' },
  });
  expectStatus(start, 200);
  const { agent_id, challenge } = (start.json() as { data: { agent_id: string; challenge: string } }).data;
  return { agent_id, challenge, token, sign: (c) => Buffer.from(kp.sign(encoder.encode(c))).toString('base64url') };
}

describe('agent enrolment without a credential issuer', () => {
  it('answers 401 to a caller without a valid challenge, as on a configured system', async () => {
    const unknown = await complete({ agent_id: randomUUID(), challenge: 'x'.repeat(43), signature: 'y'.repeat(86) });
    expectStatus(unknown, 401);
    expect(errorOf(unknown).message).not.toMatch(/configured|SVC_NATS/);
    const e = await started();
    const forged = await complete({
      agent_id: e.agent_id,
      challenge: e.challenge,
      signature: e.sign('another challenge'),
    });
    expectStatus(forged, 401);
    expect(errorOf(forged).message).not.toMatch(/configured|SVC_NATS/);
  });

  it('answers 503 to an agent that proved its challenge, leaving its install token unused', async () => {
    const e = await started();
    const res = await complete({ agent_id: e.agent_id, challenge: e.challenge, signature: e.sign(e.challenge) });
    expectStatus(res, 503);
    expect(errorOf(res).message).toContain('SVC_NATS_ISSUER_KEY');
    const [agent] = await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [e.agent_id]);
    expect(agent?.status).toBe('pending');
    const [token] = await sys.sql<{ used_at: string | null }>(
      `SELECT used_at FROM install_tokens WHERE id = (SELECT install_token_id FROM agents WHERE id = ?)`,
      [e.agent_id],
    );
    expect(token?.used_at).toBeNull();
  });
});
