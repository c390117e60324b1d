import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, userWith, waitForAudit } from '../identity/admin-support.ts';
import { TRANSITIONS, type PeerIssue } from '../support/tracker-peer.ts';
import { get, SD, startSdSystem, stopSdSystem, syncNow, type SdSystem } from './support.ts';

let s: SdSystem;
let userA: string;
let userAEmail: string;
/** In reach of client B (a role there) but without any servicedesk permission. */
let viewerB: string;

beforeAll(async () => {
  s = await startSdSystem();
  await syncNow(s);
  const a = await userWith(s.sys, 'Client', s.clientA.id);
  userA = a.token;
  userAEmail = a.user.email;
  viewerB = (await userWith(s.sys, 'Viewer', s.clientB.id)).token;
});
afterAll(() => stopSdSystem(s));

const http = (token: string, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse> =>
  s.sys.http({ method, url, token, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });
const orgA = (): PeerIssue[] => s.peer.requestsOf(s.orgA);
const orgB = (): PeerIssue[] => s.peer.requestsOf(s.orgB);

/** A multipart body with one `file` part of `size` bytes. */
function multipart(
  size: number,
  filename = 'report.txt',
  extra: Record<string, string> = {},
): { payload: Buffer; headers: Record<string, string> } {
  const boundary = '----sdtest' + Math.random().toString(16).slice(2);
  const fields = Object.entries(extra)
    .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
    .join('');
  const head = Buffer.from(
    `${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return {
    payload: Buffer.concat([head, Buffer.alloc(size, 0x61), tail]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}
const upload = (
  token: string,
  key: string,
  body: { payload: Buffer; headers: Record<string, string> },
): Promise<LightMyRequestResponse> =>
  s.sys.http({
    method: 'POST',
    url: `${SD}/tickets/${key}/attachments`,
    token,
    payload: body.payload,
    headers: body.headers,
  });

describe('ownership', () => {
  it('a caller of organization A can neither read nor write B’s requests, through every route; nothing is forwarded', async () => {
    const b = orgB()[0]!;
    const approvalB = orgB().find((i) => i.approvals.length > 0) ?? b;
    const calls: [string, 'GET' | 'POST', string, unknown?][] = [
      ['detail', 'GET', `${SD}/tickets/${b.key}`],
      ['actions', 'GET', `${SD}/tickets/${b.key}/actions`],
      ['comments', 'GET', `${SD}/tickets/${b.key}/comments`],
      ['comment', 'POST', `${SD}/tickets/${b.key}/comments`, { body: 'hi', public: true }],
      ['transitions', 'GET', `${SD}/tickets/${b.key}/transitions`],
      ['transition', 'POST', `${SD}/tickets/${b.key}/transition`, { id: '11' }],
      ['approvals', 'GET', `${SD}/tickets/${b.key}/approvals`],
      [
        'decide',
        'POST',
        `${SD}/tickets/${approvalB.key}/approvals/${approvalB.approvals[0]?.id ?? '1'}`,
        { decision: 'approve' },
      ],
      ['attachments', 'GET', `${SD}/tickets/${b.key}/attachments`],
    ];
    const before = s.peer.log.length;
    for (const [what, method, url, payload] of calls) {
      expectStatus(await http(userA, method, url, payload), 404);
      // In reach of B's client, but without the servicedesk permission: 403.
      const v = await http(viewerB, method, url, payload);
      expect(v.statusCode, `${what} as B's viewer`).toBe(403);
    }
    expectStatus(await upload(userA, b.key, multipart(10)), 404);
    expectStatus(await upload(viewerB, b.key, multipart(10)), 403);
    // Lists and the board never show B's requests to A.
    const list = await get(s, userA, `${SD}/tickets?search=${b.key}`);
    expect(list.json().data.map((t: { issue_key: string }) => t.issue_key)).not.toContain(b.key);
    const exported = await get(s, userA, `${SD}/reports/export`);
    expect(exported.body).not.toContain(`${b.key},`);
    // Creating in a service desk A has no mapping for.
    const create = await http(userA, 'POST', `${SD}/tickets`, {
      service_desk_id: '2',
      request_type_id: '20',
      request_field_values: { summary: 'x' },
    });
    expectStatus(create, 400);
    expect(create.json().error.message).toContain('does not belong to any of your organization mappings');
    // Nothing about B's requests reached the tracker.
    expect(
      s.peer.log.slice(before).filter((l) => l.path.includes(`/${b.key}`) || l.path.includes(`/${approvalB.key}`)),
    ).toEqual([]);
    expect(s.peer.log.slice(before).filter((l) => l.method === 'POST')).toEqual([]);
  });

  it('refuses malformed keys and ids with 400', async () => {
    const a = orgA()[0]!;
    for (const [method, url, payload] of [
      ['GET', `${SD}/tickets/abc-1/comments`],
      ['GET', `${SD}/tickets/A-1/transitions`],
      ['POST', `${SD}/tickets/${a.key}/approvals/x1`, { decision: 'approve' }],
      ['POST', `${SD}/tickets/${a.key}/approvals/1`, { decision: 'maybe' }],
      ['POST', `${SD}/tickets/${a.key}/transition`, { id: 'eleven' }],
      ['POST', `${SD}/tickets/${a.key}/comments`, { body: '' }],
      ['GET', `${SD}/request-types/abc/fields?service_desk_id=1`],
      ['GET', `${SD}/request-types/10/fields?service_desk_id=x`],
      [
        'POST',
        `${SD}/tickets`,
        { service_desk_id: 'one', request_type_id: '10', request_field_values: { summary: 'x' } },
      ],
      [
        'POST',
        `${SD}/tickets`,
        { service_desk_id: '1', request_type_id: '10', request_field_values: { summary: 'x', customfield_10002: [1] } },
      ],
    ] as [string, string, unknown?][]) {
      expectStatus(await http(userA, method as 'GET' | 'POST', url, payload), 400);
    }
  });
});

describe('comments, approvals, attachments', () => {
  it('lists and adds comments (public and internal), logged and audited', async () => {
    const a = orgA()[1]!;
    const list = await get(s, userA, `${SD}/tickets/${a.key}/comments?start=0&limit=25`);
    expectStatus(list, 200);
    expect(list.json().data.items.map((c: { body: string }) => c.body)).toEqual(a.comments.map((c) => c.body));
    const added = await http(userA, 'POST', `${SD}/tickets/${a.key}/comments`, {
      body: 'Internal note',
      public: false,
    });
    expectStatus(added, 201);
    expect(added.json().data).toMatchObject({ body: 'Internal note', public: false });
    expect(a.comments.at(-1)).toMatchObject({ body: 'Internal note', public: false });
    const actions = await get(s, userA, `${SD}/tickets/${a.key}/actions`);
    expectStatus(actions, 200);
    expect(actions.json().data[0]).toMatchObject({
      issue_key: a.key,
      action: 'comment',
      actor_email: userAEmail,
      details: { public: false },
    });
    await waitForAudit(s.sys, s.root, { action: 'servicedesk.comment', resource_id: a.key });
  });

  it('lists approvals and decides one', async () => {
    const a = orgA().find((i) => i.approvals.some((x) => x.finalDecision === 'pending'))!;
    const list = await get(s, userA, `${SD}/tickets/${a.key}/approvals`);
    expectStatus(list, 200);
    expect(list.json().data.items[0]).toMatchObject({
      id: a.approvals[0]!.id,
      final_decision: 'pending',
      can_answer: true,
    });
    const decided = await http(userA, 'POST', `${SD}/tickets/${a.key}/approvals/${a.approvals[0]!.id}`, {
      decision: 'decline',
    });
    expectStatus(decided, 200);
    expect(decided.json().data.final_decision).toBe('declined');
    expect(a.approvals[0]!.finalDecision).toBe('declined');
    // Deciding again: the tracker refuses (400), passed on as 502 with its words trimmed, never its body.
    const again = await http(userA, 'POST', `${SD}/tickets/${a.key}/approvals/${a.approvals[0]!.id}`, {
      decision: 'approve',
    });
    expectStatus(again, 502);
    expect(again.json().error).toMatchObject({
      code: 'bad_gateway',
      message: 'the issue tracker refused the request (400): This approval has already been decided.',
    });
    expect((await get(s, userA, `${SD}/tickets/${a.key}/actions`)).json().data[0]).toMatchObject({
      action: 'approval',
      details: { decision: 'decline' },
    });
    await waitForAudit(
      s.sys,
      s.root,
      { action: 'servicedesk.approval', resource_id: a.key },
      (e) => e.details.decision === 'decline' && e.details.approval_id === a.approvals[0]!.id,
    );
  });

  it('approves a pending approval: forwarded, logged and audited', async () => {
    const a = orgA()[5]!;
    const approvalId = '990001';
    a.approvals.push({
      id: approvalId,
      name: 'Change approval',
      finalDecision: 'pending',
      approvers: [{ approver: a.reporter, approverDecision: 'pending' }],
      created: Date.now(),
      completed: null,
    });
    const before = s.peer.count('POST', new RegExp(`/request/${a.key}/approval/${approvalId}$`));
    const approved = await http(userA, 'POST', `${SD}/tickets/${a.key}/approvals/${approvalId}`, {
      decision: 'approve',
    });
    expectStatus(approved, 200);
    expect(approved.json().data).toMatchObject({ id: approvalId, final_decision: 'approved', can_answer: false });
    expect(s.peer.count('POST', new RegExp(`/request/${a.key}/approval/${approvalId}$`))).toBe(before + 1);
    expect(a.approvals.find((x) => x.id === approvalId)).toMatchObject({
      finalDecision: 'approved',
      approvers: [{ approverDecision: 'approved' }],
    });
    const listed = await get(s, userA, `${SD}/tickets/${a.key}/approvals`);
    expect(listed.json().data.items.find((x: { id: string }) => x.id === approvalId)).toMatchObject({
      final_decision: 'approved',
      can_answer: false,
    });
    expect((await get(s, userA, `${SD}/tickets/${a.key}/actions`)).json().data[0]).toMatchObject({
      action: 'approval',
      actor_email: userAEmail,
      details: { approval_id: approvalId, decision: 'approve' },
    });
    await waitForAudit(
      s.sys,
      s.root,
      { action: 'servicedesk.approval', resource_id: a.key },
      (e) => e.details.decision === 'approve' && e.details.approval_id === approvalId,
    );
  });

  it('uploads an attachment through the temporary-file step; 10 MB + 1 byte is refused with 413 without forwarding', async () => {
    const a = orgA()[2]!;
    const ok = await upload(userA, a.key, multipart(300_000, 'logs.txt', { public: 'false' }));
    expectStatus(ok, 201);
    expect(ok.json().data.items[0]).toMatchObject({ filename: 'logs.txt', size: 300_000 });
    expect(a.attachments.at(-1)).toMatchObject({ filename: 'logs.txt', size: 300_000 });
    const list = await get(s, userA, `${SD}/tickets/${a.key}/attachments`);
    expect(list.json().data.items.map((x: { filename: string }) => x.filename)).toContain('logs.txt');

    const exactly = await upload(userA, a.key, multipart(10 * 1024 * 1024, 'max.bin'));
    expectStatus(exactly, 201);
    expect(a.attachments.at(-1)).toMatchObject({ filename: 'max.bin', size: 10 * 1024 * 1024 });

    const temporaryBefore = s.peer.count('POST', /attachTemporaryFile$/);
    const attachmentsBefore = a.attachments.length;
    const tooBig = await upload(userA, a.key, multipart(10 * 1024 * 1024 + 1, 'big.bin'));
    expectStatus(tooBig, 413);
    expect(tooBig.json().error.code).toBe('request_too_large');
    expect(s.peer.count('POST', /attachTemporaryFile$/)).toBe(temporaryBefore);
    expect(a.attachments.length).toBe(attachmentsBefore);

    expectStatus(
      await s.sys.http({
        method: 'POST',
        url: `${SD}/tickets/${a.key}/attachments`,
        token: userA,
        payload: { file: 'x' },
      }),
      400,
    );
    const noFile = multipart(0);
    noFile.payload = Buffer.from(noFile.payload.toString().replace('name="file"', 'name="other"'));
    expectStatus(await upload(userA, a.key, noFile), 400);
    expect(
      (await get(s, userA, `${SD}/tickets/${a.key}/actions`))
        .json()
        .data.filter((x: { action: string }) => x.action === 'attachment'),
    ).toHaveLength(2);
    await waitForAudit(
      s.sys,
      s.root,
      { action: 'servicedesk.attachment', resource_id: a.key },
      (e) => e.details.filename === 'logs.txt' && e.details.size === 300_000 && e.details.public === false,
    );
    await waitForAudit(
      s.sys,
      s.root,
      { action: 'servicedesk.attachment', resource_id: a.key },
      (e) => e.details.filename === 'max.bin',
    );
  });
});

describe('transitions and request creation', () => {
  it('executes only a transition from the request’s list; the new status shows until the sync, then the synced state', async () => {
    const a = orgA().find((i) => i.status === 'Open' && !i.links.length)!;
    const list = await get(s, userA, `${SD}/tickets/${a.key}/transitions`);
    expectStatus(list, 200);
    expect(list.json().data.items).toEqual(TRANSITIONS.Open!.map((t) => ({ id: t.id, name: t.name })));
    const refused = await http(userA, 'POST', `${SD}/tickets/${a.key}/transition`, { id: '41' });
    expectStatus(refused, 400);
    expect(a.status).toBe('Open');
    const done = await http(userA, 'POST', `${SD}/tickets/${a.key}/transition`, { id: '11', comment: 'on it' });
    expectStatus(done, 200);
    expect(done.json().data).toMatchObject({
      issue_key: a.key,
      status: 'In Progress',
      status_category: 'indeterminate',
    });
    expect(a.status).toBe('In Progress');
    // The store still holds Open: the pending transition is merged into the list, the board and the detail.
    const stored = await s.sys.sql<{ status: string }>(`SELECT status FROM sd_requests WHERE issue_key = ?`, [a.key]);
    expect(stored[0]!.status).toBe('Open');
    const shown = await get(s, userA, `${SD}/tickets?search=${a.key}&per_page=100`);
    expect(shown.json().data.find((t: { issue_key: string }) => t.issue_key === a.key)).toMatchObject({
      status: 'In Progress',
      pending: true,
    });
    expect(
      (await get(s, userA, `${SD}/tickets?status=In%20Progress&per_page=100`))
        .json()
        .data.map((t: { issue_key: string }) => t.issue_key),
    ).toContain(a.key);
    expect((await get(s, userA, `${SD}/tickets/${a.key}`)).json().data.ticket).toMatchObject({
      status: 'In Progress',
      pending: true,
    });
    const board = (await get(s, userA, `${SD}/kanban`)).json().data;
    const inProgress = board.columns.find((c: { category: string }) => c.category === 'In Progress');
    const onBoard = inProgress.statuses
      .flatMap((g: { tickets: { issue_key: string }[] }) => g.tickets)
      .find((t: { issue_key: string }) => t.issue_key === a.key);
    // The board writes its tickets in PostgreSQL (with pending writes merged too): the same ticket as the list's.
    expect(onBoard).toStrictEqual(shown.json().data.find((t: { issue_key: string }) => t.issue_key === a.key));
    // The tracker moves on meanwhile; the sync brings its state and the pending entry goes.
    s.peer.move(a.key, 'Waiting for customer');
    await syncNow(s);
    expect((await get(s, userA, `${SD}/tickets/${a.key}`)).json().data.ticket).toMatchObject({
      status: 'Waiting for customer',
      pending: false,
    });
    expect(await s.sys.sql(`SELECT 1 FROM sd_pending WHERE issue_key = ?`, [a.key])).toHaveLength(0);
    const log = (await get(s, userA, `${SD}/tickets/${a.key}/actions`)).json().data;
    expect(log[0]).toMatchObject({ action: 'transition', details: { transition_id: '11', status: 'In Progress' } });
    await waitForAudit(
      s.sys,
      s.root,
      { action: 'servicedesk.transition', resource_id: a.key },
      (e) => e.details.transition_id === '11' && e.details.status === 'In Progress' && e.details.with_comment === true,
    );
  });

  it('a transition whose request cannot be read right after records no status: the stored one shows until the sync', async () => {
    const a = orgA().find((i) => i.status === 'Open' && !i.links.length && i.histories.length === 0)!;
    const path = `/rest/servicedeskapi/request/${a.key}`;
    s.peer.faults.push({ match: (m, p) => m === 'GET' && p === path, status: 500 });
    const before = s.peer.log.length;
    const done = await http(userA, 'POST', `${SD}/tickets/${a.key}/transition`, { id: '11' });
    expectStatus(done, 200);
    expect(done.json().data).toEqual({ issue_key: a.key, transition_id: '11', status: null, status_category: null });
    // The transition went through and the read after it was the one that failed (the fault is spent).
    expect(a.status).toBe('In Progress');
    expect(s.peer.faults).toHaveLength(0);
    expect(s.peer.log.slice(before).filter((l) => l.method === 'GET' && l.path === path)).toHaveLength(1);
    // No override: never the transition's name ("Start progress"), the stored status until the sync.
    expect(await s.sys.sql(`SELECT 1 FROM sd_pending WHERE issue_key = ?`, [a.key])).toHaveLength(0);
    expect((await get(s, userA, `${SD}/tickets/${a.key}`)).json().data.ticket).toMatchObject({
      status: 'Open',
      pending: false,
    });
    const listed = await get(s, userA, `${SD}/tickets?search=${a.key}&per_page=100`);
    expect(listed.json().data.find((t: { issue_key: string }) => t.issue_key === a.key)).toMatchObject({
      status: 'Open',
      pending: false,
    });
    expect((await get(s, userA, `${SD}/tickets?status=Start%20progress&per_page=1`)).json().meta.total).toBe(0);
    // The action is logged all the same, without a status.
    const log = (await get(s, userA, `${SD}/tickets/${a.key}/actions`)).json().data;
    expect(log[0]).toMatchObject({
      action: 'transition',
      details: { transition_id: '11', transition: 'Start progress', status: null },
    });
    await syncNow(s);
    expect((await get(s, userA, `${SD}/tickets/${a.key}`)).json().data.ticket).toMatchObject({
      status: 'In Progress',
      pending: false,
    });
  });

  it('creates a request in a mapped service desk with the organization set; PENDING until synced', async () => {
    const customer = s.peer.customers.get(s.orgA)![0]!;
    const res = await http(userA, 'POST', `${SD}/tickets`, {
      service_desk_id: '1',
      request_type_id: '10',
      request_field_values: { summary: 'New laptop please', description: 'Mine broke', priority: { id: '2' } },
      raiseOnBehalfOf: customer.accountId,
    });
    expectStatus(res, 201);
    const created = res.json().data;
    expect(created).toMatchObject({
      service_desk_id: '1',
      request_type_id: '10',
      organization_id: s.orgA,
      status: 'PENDING',
    });
    expect(s.peer.lastCreate).toMatchObject({
      serviceDeskId: '1',
      requestTypeId: '10',
      raiseOnBehalfOf: customer.accountId,
      requestFieldValues: {
        summary: 'New laptop please',
        description: 'Mine broke',
        priority: { id: '2' },
        customfield_10002: [Number(s.orgA)],
      },
    });
    const listed = await get(s, userA, `${SD}/tickets?search=laptop`);
    // Its total too: with a write pending, a search counts the merged rows, not the store's search copy.
    expect(listed.json().meta.total).toBe(1);
    expect(listed.json().data).toEqual([
      expect.objectContaining({
        issue_key: created.issue_key,
        status: 'PENDING',
        pending: true,
        summary: 'New laptop please',
      }),
    ]);
    expect((await get(s, userA, `${SD}/tickets/${created.issue_key}`)).json().data.ticket.status).toBe('PENDING');
    // B never sees it.
    expect(
      (await get(s, (await userWith(s.sys, 'Client', s.clientB.id)).token, `${SD}/tickets?search=laptop`)).json().meta
        .total,
    ).toBe(0);
    await syncNow(s);
    const synced = await get(s, userA, `${SD}/tickets?search=laptop`);
    expect(synced.json().meta.total).toBe(1);
    expect(synced.json().data).toEqual([
      expect.objectContaining({
        issue_key: created.issue_key,
        status: 'Open',
        pending: false,
        priority: 'High',
        reporter_email: customer.emailAddress,
      }),
    ]);
    expect((await get(s, userA, `${SD}/tickets/${created.issue_key}/actions`)).json().data[0]).toMatchObject({
      action: 'create',
    });
    await waitForAudit(s.sys, s.root, { action: 'servicedesk.create', resource_id: created.issue_key });
    // The tracker's refusal of the input is a 502 (the failure is the tracker's answer, not our input) with its words.
    const noType = await http(userA, 'POST', `${SD}/tickets`, {
      service_desk_id: '1',
      request_type_id: '20',
      request_field_values: { summary: 'x' },
    });
    expectStatus(noType, 502);
    expect(noType.json().error.code).toBe('bad_gateway');
    expect(noType.json().error.message).toContain(
      'the issue tracker refused the request (400): The request type you are trying to use does not exist',
    );
  });

  it('resolves an engineering key to its support request before forwarding', async () => {
    const a = orgA().find((i) => i.links.length > 0);
    expect(a).toBeDefined();
    const eng = a!.links[0]!.outward!;
    const before = s.peer.log.length;
    const res = await get(s, userA, `${SD}/tickets/${eng}/comments`);
    expectStatus(res, 200);
    const forwarded = s.peer.log.slice(before).map((l) => l.path);
    expect(forwarded).toContain(`/rest/servicedeskapi/request/${a!.key}/comment`);
    expect(forwarded.some((p) => p.includes(eng))).toBe(false);
    // An engineering key linked to another organization's request stays out of reach.
    const b = orgB().find((i) => i.links.length > 0);
    if (b) expectStatus(await get(s, userA, `${SD}/tickets/${b.links[0]!.outward}/comments`), 404);
  });
});

describe('requests the store does not know yet', () => {
  it('checks ownership through the tracker (the issue and its links) before forwarding', async () => {
    const template = orgA()[4]!;
    const key = `${s.peer.names.sup}-7000`;
    const eng = `${s.peer.names.eng}-7000`;
    s.peer.issues.set(key, { ...template, id: '7000', key, comments: [], links: [{ outward: eng }] });
    s.peer.issues.set(eng, {
      ...template,
      id: '7001',
      key: eng,
      project: s.peer.names.eng,
      orgIds: [],
      serviceDeskId: null,
      requestTypeId: null,
      comments: [],
      links: [{ inward: key }],
    });
    expect(await s.sys.sql(`SELECT 1 FROM sd_requests WHERE issue_key IN (?, ?)`, [key, eng])).toHaveLength(0);
    expectStatus(await get(s, userA, `${SD}/tickets/${key}/comments`), 200);
    const before = s.peer.log.length;
    expectStatus(await get(s, userA, `${SD}/tickets/${eng}/transitions`), 200);
    expect(s.peer.log.slice(before).map((l) => l.path)).toContain(`/rest/servicedeskapi/request/${key}/transition`);
    const other = (await userWith(s.sys, 'Client', s.clientB.id)).token;
    const beforeB = s.peer.log.length;
    expectStatus(await get(s, other, `${SD}/tickets/${key}/comments`), 404);
    expectStatus(await get(s, other, `${SD}/tickets/${eng}/comments`), 404);
    // Only the scope look-ups reached the tracker, nothing of the request itself.
    expect(s.peer.log.slice(beforeB).every((l) => l.path.startsWith('/rest/api/3/issue/'))).toBe(true);
    expectStatus(await get(s, userA, `${SD}/tickets/${s.peer.names.sup}-9999/comments`), 404);
  });
});

describe('the outgoing client', () => {
  it('passes the tracker’s 429 on with its Retry-After; other failures are 502 without the tracker’s body', async () => {
    const a = orgA()[3]!;
    s.peer.faults.push({
      match: (m, p) => m === 'GET' && p.endsWith(`/${a.key}/comment`),
      status: 429,
      headers: { 'retry-after': '7' },
    });
    const limited = await get(s, userA, `${SD}/tickets/${a.key}/comments`);
    expectStatus(limited, 429);
    expect(limited.headers['retry-after']).toBe('7');
    expect(limited.json().error.code).toBe('too_many_requests');

    // A read is retried after a 503; the second attempt answers.
    s.peer.faults.push({ match: (m, p) => m === 'GET' && p.endsWith(`/${a.key}/attachment`), status: 503 });
    expectStatus(await get(s, userA, `${SD}/tickets/${a.key}/attachments`), 200);

    for (let i = 0; i < 3; i++)
      s.peer.faults.push({
        match: (m, p) => m === 'GET' && p.endsWith(`/${a.key}/approval`),
        status: 500,
        body: { errorMessages: ['java.lang.NullPointerException at com.atlassian.secret'] },
      });
    const broken = await get(s, userA, `${SD}/tickets/${a.key}/approvals`);
    expectStatus(broken, 502);
    expect(broken.json().error.code).toBe('bad_gateway');
    expect(broken.body).not.toContain('NullPointer');

    s.peer.faults.push({
      match: (m, p) => m === 'GET' && p.endsWith(`/${a.key}/transition`),
      status: 404,
      body: { errorMessage: 'Request does not exist' },
    });
    const gone = await get(s, userA, `${SD}/tickets/${a.key}/transitions`);
    expectStatus(gone, 404);
    expect(gone.json().error.message).toContain('does not exist in the issue tracker');
  });

  it('caches request-type fields for SVC_SD_FIELD_CACHE_TTL', async () => {
    const before = s.peer.count('GET', /\/requesttype\/11\/field$/);
    const first = await get(s, userA, `${SD}/request-types/11/fields?service_desk_id=1`);
    expectStatus(first, 200);
    expect(first.json().data.fields.map((f: { field_id: string }) => f.field_id)).toEqual([
      'summary',
      'description',
      'priority',
    ]);
    const second = await get(s, userA, `${SD}/request-types/11/fields?service_desk_id=1`);
    expect(second.json().data).toEqual(first.json().data);
    expect(s.peer.count('GET', /\/requesttype\/11\/field$/)).toBe(before + 1);
    // A service desk outside the caller's mappings.
    expectStatus(await get(s, userA, `${SD}/request-types/20/fields?service_desk_id=2`), 404);
  });
});
