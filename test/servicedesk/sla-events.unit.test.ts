import { describe, expect, it } from 'vitest';
import { SlaChanged, type SlaCycle } from '../../contracts/domains/servicedesk.ts';
import type { MappingRow } from '../../actors/servicedesk/scope.ts';
import { toRecord } from '../../actors/servicedesk/sync/normalize.ts';
import {
  changedCycles,
  clientsSeeing,
  cycleFacts,
  slaEvents,
  slaMsgId,
  stateOf,
  type SlaFacts,
  type SlaRecord,
} from '../../actors/servicedesk/sync/sla-events.ts';
import { Issue, SlaDto } from '../../actors/servicedesk/tracker/api.ts';

/** What the sync announces of a request's SLA cycles, decided from the stored copy and the synced one. */

const TTR = 'Time to resolution';
const FRT = 'Time to first response';
const BREACH = '2026-03-02T12:00:00.000Z';
const LATER = '2026-03-02T15:00:00.000Z';
const CLIENT_A = '11111111-1111-4111-8111-111111111111';
const CLIENT_B = '22222222-2222-4222-8222-222222222222';

const cycle = (over: Partial<SlaCycle> = {}): SlaCycle => ({
  name: TTR,
  state: 'ongoing',
  start: '2026-03-01T12:00:00.000Z',
  stop: null,
  breached: false,
  paused: false,
  goal_ms: 86_400_000,
  elapsed_ms: 3_600_000,
  ...over,
});
const done = (breached: boolean): SlaCycle =>
  cycle({ state: 'completed', stop: '2026-03-01T18:00:00.000Z', breached, elapsed_ms: 6 * 3_600_000 });

const mapping = (client: string, org: string, over: Partial<MappingRow> = {}): MappingRow => ({
  id: `00000000-0000-4000-8000-${client.slice(-12)}`,
  client_id: client,
  organization_id: org,
  organization_name: 'Acme',
  service_desk_ids: ['1'],
  project_keys: ['SUP'],
  labels: [],
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

const record = (facts: SlaFacts, over: Partial<SlaRecord> = {}): SlaRecord => ({
  issue_key: 'SUP-7',
  summary: 'VPN down',
  project_key: 'SUP',
  organization_ids: ['100'],
  labels: [],
  updated_at: '2026-03-01T13:00:00.000Z',
  sla_facts: facts,
  ...over,
});

const ongoing = { name: TTR, state: 'ongoing' as const, breach_at: BREACH };

describe('the state of an SLA', () => {
  it('is the running cycle’s (paused before breached), else the last completed one’s, else none', () => {
    expect(stateOf([cycle()])).toBe('ongoing');
    expect(stateOf([cycle({ paused: true })])).toBe('paused');
    expect(stateOf([cycle({ breached: true })])).toBe('breached');
    expect(stateOf([cycle({ breached: true, paused: true })])).toBe('paused');
    expect(stateOf([done(false)])).toBe('met');
    expect(stateOf([done(true)])).toBe('breached');
    // A reopened request: the met cycle is history, the running one counts; the last of several completed ones does.
    expect(stateOf([done(false), cycle()])).toBe('ongoing');
    expect(stateOf([done(false), done(true)])).toBe('breached');
    expect(stateOf([done(true), done(false)])).toBe('met');
    expect(stateOf([])).toBeUndefined();
  });

  it('has a breach time only while its cycle runs unpaused and the tracker gives one', () => {
    const at = new Date(BREACH);
    expect(cycleFacts([cycle()], at)).toEqual({ name: TTR, state: 'ongoing', breach_at: BREACH });
    expect(cycleFacts([cycle({ breached: true })], at)).toEqual({ name: TTR, state: 'breached', breach_at: BREACH });
    expect(cycleFacts([cycle({ paused: true })], at)).toEqual({ name: TTR, state: 'paused', breach_at: null });
    expect(cycleFacts([done(false)], null)).toEqual({ name: TTR, state: 'met', breach_at: null });
    expect(cycleFacts([cycle()], null)).toEqual({ name: TTR, state: 'ongoing', breach_at: null });
    expect(cycleFacts([], at)).toBeUndefined();
  });

  it('is kept per metric by the sync’s record, from the tracker’s cycles and breach times', () => {
    const dto = (name: string, body: Record<string, unknown>): SlaDto => SlaDto.parse({ name, ...body });
    const issue = Issue.parse({
      id: '10001',
      key: 'SUP-7',
      fields: {
        summary: 'VPN down',
        created: '2026-03-01T12:00:00.000+0000',
        updated: '2026-03-01T13:00:00.000+0000',
        project: { key: 'SUP' },
        customfield_10002: [{ id: '100', name: 'Acme' }],
      },
    });
    const site = {
      firstResponseSla: undefined,
      resolutionSla: undefined,
      requestType: undefined,
      organizations: 'customfield_10002',
      categoryById: new Map(),
      categoryByName: new Map(),
    };
    const r = toRecord(issue, [], site, {
      firstResponse: dto(FRT, {
        completedCycles: [
          {
            startTime: { epochMillis: Date.parse('2026-03-01T12:00:00Z') },
            stopTime: { epochMillis: Date.parse('2026-03-01T12:30:00Z') },
            breachTime: { epochMillis: Date.parse('2026-03-01T16:00:00Z') },
            breached: false,
          },
        ],
      }),
      resolution: dto(TTR, {
        ongoingCycle: {
          startTime: { epochMillis: Date.parse('2026-03-01T12:00:00Z') },
          breachTime: { iso8601: '2026-03-02T13:00:00+0100' },
          breached: false,
          paused: false,
        },
      }),
    });
    expect(r.sla_facts).toEqual({
      first_response: { name: FRT, state: 'met', breach_at: null },
      resolution: { name: TTR, state: 'ongoing', breach_at: BREACH },
    });
    expect(toRecord(issue, [], site, { firstResponse: undefined, resolution: undefined }).sla_facts).toEqual({});
  });
});

describe('a change of an SLA cycle', () => {
  const stored = (facts: SlaFacts) => ({ sla: [], sla_facts: facts });

  it('is every SLA of a request the store did not hold, and of one stored without it', () => {
    const next = { resolution: ongoing, first_response: { name: FRT, state: 'met' as const, breach_at: null } };
    expect(changedCycles(undefined, next).map((c) => c.metric)).toEqual(['first_response', 'resolution']);
    expect(changedCycles(stored({}), { resolution: ongoing })).toEqual([{ metric: 'resolution', facts: ongoing }]);
  });

  it('is nothing for the same state and breach time (a re-sync of an unchanged request)', () => {
    expect(changedCycles(stored({ resolution: ongoing }), { resolution: { ...ongoing } })).toEqual([]);
    expect(changedCycles(stored({}), {})).toEqual([]);
  });

  it('is a moved breach time, a pause, a breach, a met cycle', () => {
    const from = stored({ resolution: ongoing });
    for (const now of [
      { ...ongoing, breach_at: LATER },
      { ...ongoing, state: 'paused' as const, breach_at: null },
      { ...ongoing, state: 'breached' as const },
      { ...ongoing, state: 'met' as const, breach_at: null },
    ])
      expect(changedCycles(from, { resolution: now }), now.state).toEqual([{ metric: 'resolution', facts: now }]);
  });

  it('is nothing when an SLA is gone (there is no state to tell)', () => {
    expect(changedCycles(stored({ resolution: ongoing }), {})).toEqual([]);
  });

  it('on a row stored before the facts were kept, is a change of state only, read from its cycles by the SLA’s name', () => {
    const legacy = { sla: [cycle({ name: FRT, state: 'completed', breached: true }), cycle()], sla_facts: null };
    // Same state: the unknown breach time tells nothing (else every re-read request would be announced once).
    expect(changedCycles(legacy, { resolution: { ...ongoing, breach_at: LATER } })).toEqual([]);
    expect(changedCycles(legacy, { first_response: { name: FRT, state: 'breached', breach_at: null } })).toEqual([]);
    const breached = { ...ongoing, state: 'breached' as const };
    expect(changedCycles(legacy, { resolution: breached })).toEqual([{ metric: 'resolution', facts: breached }]);
    // No cycle of that name stored: a new SLA.
    expect(changedCycles({ sla: [], sla_facts: null }, { resolution: ongoing })).toHaveLength(1);
  });
});

describe('the events of a synced copy', () => {
  const mappings = [
    mapping(CLIENT_B, '100'),
    mapping(CLIENT_A, '100'),
    mapping(CLIENT_A, '200', { project_keys: ['OPS'] }),
    mapping('33333333-3333-4333-8333-333333333333', '100', { labels: ['vip'] }),
    mapping('44444444-4444-4444-8444-444444444444', '300'),
  ];

  it('name the clients whose mappings cover the request, as the reads decide (organization, project, labels)', () => {
    expect(clientsSeeing(record({}), mappings)).toEqual([CLIENT_A, CLIENT_B]);
    expect(clientsSeeing(record({}, { labels: ['vip'] }), mappings)).toHaveLength(3);
    expect(clientsSeeing(record({}, { organization_ids: ['200'] }), mappings)).toEqual([]);
    expect(clientsSeeing(record({}, { organization_ids: ['200'], project_key: 'OPS' }), mappings)).toEqual([CLIENT_A]);
  });

  it('are one per changed metric, valid for the contract, with the request’s update time', () => {
    const events = slaEvents(record({ resolution: ongoing }), undefined, mappings);
    expect(events).toEqual([
      {
        issue_key: 'SUP-7',
        summary: 'VPN down',
        client_ids: [CLIENT_A, CLIENT_B],
        metric: 'resolution',
        state: 'ongoing',
        breach_at: BREACH,
        at: '2026-03-01T13:00:00.000Z',
      },
    ]);
    for (const e of events) expect(SlaChanged.parse(e)).toEqual(e);
    expect(slaMsgId(events[0]!)).toBe(`sla:SUP-7:resolution:ongoing:${BREACH}:${events[0]!.at}`);
    expect(slaMsgId({ ...events[0]!, state: 'paused', breach_at: null })).toBe(
      `sla:SUP-7:resolution:paused::${events[0]!.at}`,
    );
  });

  it('are none for a request no client sees, and none for an unchanged one', () => {
    expect(slaEvents(record({ resolution: ongoing }, { organization_ids: ['999'] }), undefined, mappings)).toEqual([]);
    expect(slaEvents(record({ resolution: ongoing }), undefined, [])).toEqual([]);
    expect(
      slaEvents(record({ resolution: ongoing }), { sla: [], sla_facts: { resolution: ongoing } }, mappings),
    ).toEqual([]);
  });
});
