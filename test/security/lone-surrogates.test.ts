import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listDeadLetters } from '../../platform/dlq.ts';
import { runConsumer } from '../../platform/jetstream.ts';
import { connectNats } from '../../platform/nats.ts';
import { wireDurableName, wireDurableSubject } from '../../platform/namespace.ts';
import { pgJson, pgText } from '../../platform/stores/pg-values.ts';
import { DlqHeaders, dlqSubjectFor } from '../../contracts/streams.ts';
import { dlqCommand } from '../../scripts/dlq.ts';
import { capturingLogger } from '../support/log-capture.ts';
import { NATS_ADMIN_CREDS, NATS_CA, NATS_URL } from '../support/env.ts';
import { waitFor } from '../support/processes.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, waitForAudit } from '../identity/admin-support.ts';

/**
 * A lone surrogate (`"\udfff"` in JSON) in a request used to be stored as U+FFFD in text columns
 * while its audit entry, whose jsonb details PostgreSQL refused, never appeared.
 */

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem({ SVC_ENABLE_DEBUG_ENDPOINTS: 'true' })));
afterAll(() => sys?.stop());

const LONE = 'must be well-formed Unicode (it contains a lone surrogate)';

/** A JSON body as a client writes it, the escape spelt out (what JSON.stringify sends for a lone surrogate). */
const rawJson = (text: string): { payload: string; headers: Record<string, string> } => ({
  payload: text,
  headers: { 'content-type': 'application/json' },
});

describe('a lone surrogate in a request', () => {
  it('is refused with 400 naming the field, and the team keeps its name', async () => {
    const call = api(sys, { token: root });
    const created = await call('POST', '/api/v1/teams', { name: `Unicode ${sys.tag}`, description: '' });
    expectStatus(created, 201);
    const team = created.json().data as { id: string };

    const put = await sys.http({
      method: 'PUT',
      url: `/api/v1/teams/${team.id}`,
      token: root,
      ...rawJson('{"name": "\\udfff lone"}'),
    });
    expectStatus(put, 400);
    expect(errorOf(put)).toMatchObject({ code: 'bad_request', message: `body.name: ${LONE}` });
    expect((await call('GET', `/api/v1/teams/${team.id}`)).json().data.name).toBe(`Unicode ${sys.tag}`);

    const cases: [string, string, string | undefined, string][] = [
      ['POST', '/api/v1/teams', '{"name": "high \\ud83d alone"}', `body.name: ${LONE}`],
      [
        'POST',
        '/api/v1/roles',
        '{"name": "r", "permissions": ["users:read", "\\udc00"]}',
        `body.permissions.1: ${LONE}`,
      ],
      ['POST', '/api/v1/teams', '{"name": "ok", "k\\udfff": 1}', `body.k\\udfff: ${LONE}`],
      ['GET', '/api/v1/users?page=1&search=%ED%BF%BF', undefined, ''],
    ];
    for (const [method, url, body, message] of cases) {
      const res = await sys.http({
        method: method as 'GET' | 'POST',
        url,
        token: root,
        ...(body !== undefined ? rawJson(body) : {}),
      });
      // Percent-encoded surrogate bytes are not UTF-8: the URL decoder never yields a lone surrogate from them.
      if (body === undefined) {
        expect(res.statusCode).toBeLessThan(500);
        continue;
      }
      expectStatus(res, 400);
      expect(errorOf(res)).toMatchObject({ code: 'bad_request', message });
    }

    // A well-formed pair (an emoji) is an ordinary character.
    const renamed = await sys.http({
      method: 'PUT',
      url: `/api/v1/teams/${team.id}`,
      token: root,
      ...rawJson(`{"name": "Unicode \\ud83d\\ude80 ${sys.tag}"}`),
    });
    expectStatus(renamed, 200);
    expect(renamed.json().data.name).toBe(`Unicode \u{1F680} ${sys.tag}`);
    await waitForAudit(sys, root, { action: 'team.updated', resource_id: team.id });
  });

  it('is refused by the invoicing gateway too, in its own envelope', async () => {
    const res = await sys.invoicingHttp({
      method: 'PATCH',
      url: `/api/v1/invoices/${crypto.randomUUID()}`,
      token: root,
      ...rawJson('{"notes": "\\udfff"}'),
    });
    expectStatus(res, 400);
    expect(errorOf(res)).toMatchObject({ code: 'VALIDATION_ERROR', message: `body.notes: ${LONE}` });
  });
});

/** An audit entry as a publisher that did not check its strings would send it: JSON.stringify writes `\\udfff`. */
const auditEntryText = (id: string, details: Record<string, unknown>, actorEmail: string | null = null): string =>
  JSON.stringify({
    id,
    actor_id: null,
    actor_email: actorEmail,
    actor_type: 'anonymous',
    action: 'team.updated',
    resource_type: 'team',
    resource_id: id,
    details,
    ip: null,
    user_agent: null,
    request_id: `lone-${id}`,
    created_at: new Date().toISOString(),
  });

const storedDetails = async (
  id: string,
): Promise<{ details: Record<string, unknown>; actor_email: string | null } | undefined> =>
  (
    await sys.sql<{ details: Record<string, unknown>; actor_email: string | null }>(
      'SELECT details, actor_email FROM audit_log WHERE id = ?',
      [id],
    )
  )[0];

describe('jsonb writers', () => {
  it('make every string and key storable: NUL dropped, a lone surrogate as U+FFFD, pairs kept', () => {
    expect(pgJson({ 'k\ud800': ['a\u0000b', '\udfff lone', 'ok \u{1F680}'], n: 1, nested: { x: '\ud83d' } })).toBe(
      '{"k\ufffd":["ab","\ufffd lone","ok \u{1F680}"],"n":1,"nested":{"x":"\ufffd"}}',
    );
    expect(pgText('x\u0000\udc00')).toBe('x\ufffd');
  });

  it('store an audit event that carries a lone surrogate (the consumer used to retry it until it gave up)', async () => {
    const id = randomUUID();
    const text = auditEntryText(id, { name: '\udfff lone', ['k\ud800']: 'v' }, 'x\udfff@example.com');
    expect(text).toContain('\\udfff');
    await jetstream(sys.nc).publish(wireDurableSubject('svc.evt.audit.recorded'), new TextEncoder().encode(text));
    await waitFor(async () => (await storedDetails(id)) !== undefined, 15_000, 'the audit entry stored');
    expect(await storedDetails(id)).toEqual({
      details: { name: '\ufffd lone', 'k\ufffd': 'v' },
      actor_email: 'x\ufffd@example.com',
    });
  });
});

const AUDIT_DURABLE = 'identity-audit-store';
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

/** `svc_dead_letters_total` of the audit store for `reason`, as the console gateway's /metrics serves it. */
async function auditDeadLetters(reason: string): Promise<number> {
  const res = await sys.http({ method: 'GET', url: '/metrics' });
  expectStatus(res, 200);
  const line = res.body
    .split('\n')
    .find((l) =>
      l.startsWith(`svc_dead_letters_total{durable="${wireDurableName(AUDIT_DURABLE)}",reason="${reason}"}`),
    );
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('an audit event the consumer gives up on', () => {
  it('raises the dead-letter metric and is listed in the dead-letter subject with its source sequence', async () => {
    const before = await auditDeadLetters('malformed');
    const ack = await jetstream(sys.nc).publish(
      wireDurableSubject('svc.evt.audit.recorded'),
      encode(JSON.stringify({ id: 'not-a-uuid' })),
    );
    await waitFor(
      async () => (await auditDeadLetters('malformed')) === before + 1,
      15_000,
      'the metric to count the dead letter',
    );
    const letters = await listDeadLetters(sys.nc, AUDIT_DURABLE);
    expect(letters.find((d) => d.sourceSeq === String(ack.seq))).toMatchObject({
      subject: wireDurableSubject('svc.evt.audit.recorded'),
      reason: 'malformed',
    });
  });

  it('is stored once its dead letter is replayed (npm run dlq -- replay)', async () => {
    // As the consumer dead-letters an entry whose insert kept failing (the database refused it, or was down).
    const id = randomUUID();
    const h = natsHeaders();
    h.set(DlqHeaders.subject, wireDurableSubject('svc.evt.audit.recorded'));
    h.set(DlqHeaders.reason, 'failed');
    h.set(DlqHeaders.error, 'invalid input syntax for type json');
    h.set(DlqHeaders.streamSeq, '1');
    h.set(DlqHeaders.durable, wireDurableName(AUDIT_DURABLE));
    const dead = await jetstream(sys.nc).publish(
      dlqSubjectFor(wireDurableName(AUDIT_DURABLE)),
      encode(auditEntryText(id, { name: 'replayed' })),
      { headers: h },
    );
    expect(await storedDetails(id)).toBeUndefined();

    const printed: string[] = [];
    const code = await dlqCommand(sys.nc, ['replay', AUDIT_DURABLE, String(dead.seq)], capturingLogger().log, (l) =>
      printed.push(l),
    );
    expect(code).toBe(0);
    expect(JSON.parse(printed[0]!)).toEqual({ replayed: [dead.seq], skipped: [] });
    await waitFor(async () => (await storedDetails(id)) !== undefined, 15_000, 'the replayed audit entry stored');
    expect((await storedDetails(id))?.details).toEqual({ name: 'replayed' });
    // Replayed dead letters leave the DLQ; a second replay of the same one is reported, not repeated.
    expect((await listDeadLetters(sys.nc, AUDIT_DURABLE)).some((d) => d.seq === dead.seq)).toBe(false);
    printed.length = 0;
    expect(
      await dlqCommand(sys.nc, ['replay', AUDIT_DURABLE, String(dead.seq)], capturingLogger().log, (l) =>
        printed.push(l),
      ),
    ).toBe(1);
    expect(JSON.parse(printed[0]!).skipped).toEqual([
      { seq: dead.seq, why: `no dead letter of ${AUDIT_DURABLE} at this sequence` },
    ]);
  });

  it('is logged at error, naming the subject and the stream sequence, by a consumer that alerts on dead letters', async () => {
    const rand = randomUUID().slice(0, 8);
    const subject = wireDurableSubject(`svc.evt.test_${rand}.alerting`);
    const durable = `test_${rand}_alerting`;
    const { log, lines } = capturingLogger('warn');
    const handle = await runConsumer({
      nc: sys.nc,
      stream: 'SVC_EVENTS',
      durable,
      filterSubjects: [`svc.evt.test_${rand}.alerting`],
      schema: z.object({ n: z.number() }),
      handler: async () => undefined,
      alertOnDeadLetter: true,
      log,
    });
    try {
      const ack = await jetstream(sys.nc).publish(subject, encode('not json'));
      await waitFor(() => lines.some((l) => l.level === 50), 15_000, 'the error line');
      const line = lines.find((l) => l.level === 50)!;
      expect(line).toMatchObject({ subject, seq: ack.seq, reason: 'malformed' });
      expect(line.msg).toContain(`${subject} sequence ${ack.seq}`);
      expect(line.msg).toContain(`npm run dlq -- replay ${durable}`);
    } finally {
      await handle.stop();
      const admin = await connectNats(
        NATS_URL,
        'lone-surrogates-cleanup',
        capturingLogger().log,
        NATS_ADMIN_CREDS,
        NATS_CA,
      );
      const jsm = await jetstreamManager(admin);
      await jsm.consumers.delete('SVC_EVENTS', wireDurableName(durable)).catch(() => undefined);
      await jsm.streams.purge('SVC_DLQ', { filter: dlqSubjectFor(wireDurableName(durable)) }).catch(() => undefined);
      await jsm.streams.purge('SVC_EVENTS', { filter: subject }).catch(() => undefined);
      await admin.close();
    }
  });
});
