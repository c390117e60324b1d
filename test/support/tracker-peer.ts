import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Busboy } from '@fastify/busboy';
import { seededRandom } from '../../platform/seeded-random.ts';

/**
 * A local issue tracker for the tests: a real HTTP server speaking the subset of Jira Service Management Cloud's REST
 * APIs the service desk uses (servicedeskapi: requests, comments, transitions, approvals, temporary attachments,
 * request-type fields, organizations, service desks, SLA; platform /rest/api/3: enhanced JQL search with changelog,
 * issues with their links and changelog, fields, statuses, the account). It holds a few hundred generated requests
 * across two organizations, counts every call, and can be told to fail the next calls (429 with Retry-After, 5xx).
 */

export const PEER_EMAIL = 'svc-bot@example.com';
export const PEER_TOKEN = 'peer-api-token';
export const PEER_TIMEZONE = 'Europe/Berlin';

export interface PeerUser {
  accountId: string;
  displayName: string;
  emailAddress: string;
}

export interface PeerStatus {
  id: string;
  name: string;
  category: 'new' | 'indeterminate' | 'done';
}

export const STATUSES: readonly PeerStatus[] = [
  { id: '1', name: 'Open', category: 'new' },
  { id: '2', name: 'Waiting for support', category: 'new' },
  { id: '3', name: 'In Progress', category: 'indeterminate' },
  { id: '4', name: 'Waiting for customer', category: 'indeterminate' },
  { id: '5', name: 'Resolved', category: 'done' },
  { id: '6', name: 'Closed', category: 'done' },
];
const statusByName = new Map(STATUSES.map((s) => [s.name, s]));
export const categoryOf = (status: string): 'new' | 'indeterminate' | 'done' =>
  statusByName.get(status)?.category ?? 'new';

/** Which transitions each status offers: id, name, target status. */
export const TRANSITIONS: Record<string, { id: string; name: string; to: string }[]> = {
  Open: [
    { id: '11', name: 'Start progress', to: 'In Progress' },
    { id: '21', name: 'Resolve this issue', to: 'Resolved' },
  ],
  'Waiting for support': [{ id: '11', name: 'Start progress', to: 'In Progress' }],
  'In Progress': [
    { id: '31', name: 'Wait for customer', to: 'Waiting for customer' },
    { id: '21', name: 'Resolve this issue', to: 'Resolved' },
  ],
  'Waiting for customer': [{ id: '41', name: 'Respond to support', to: 'In Progress' }],
  Resolved: [
    { id: '51', name: 'Close', to: 'Closed' },
    { id: '61', name: 'Reopen', to: 'Open' },
  ],
  Closed: [],
};

export const PRIORITIES = ['Highest', 'High', 'Medium', 'Low', 'Lowest'] as const;
export const TYPES = ['Service Request', 'Incident', 'Problem'] as const;
export const FRT_GOAL_MS = 4 * 3_600_000;
export const TTR_GOAL_MS = 48 * 3_600_000;

export interface PeerHistory {
  id: string;
  created: number;
  from: string;
  to: string;
}

export interface PeerIssue {
  id: string;
  key: string;
  project: string;
  summary: string;
  status: string;
  priority: string;
  type: string;
  assignee: PeerUser | null;
  reporter: PeerUser;
  orgIds: string[];
  labels: string[];
  serviceDeskId: string | null;
  requestTypeId: string | null;
  created: number;
  updated: number;
  resolved: number | null;
  due: string | null;
  histories: PeerHistory[];
  comments: { id: string; body: string; public: boolean; author: PeerUser; created: number }[];
  approvals: {
    id: string;
    name: string;
    finalDecision: string;
    approvers: { approver: PeerUser; approverDecision: string }[];
    created: number;
    completed: number | null;
  }[];
  attachments: { filename: string; size: number; mimeType: string; created: number; author: PeerUser }[];
  links: { outward?: string; inward?: string }[];
}

/**
 * Names of one peer's data. Each test run gets its own project keys and organization ids, because the read store is
 * shared by every run on the database: keys and organizations never collide with an earlier run's rows.
 */
export interface PeerNames {
  tag: string;
  sup: string;
  ops: string;
  eng: string;
  orgs: { id: string; name: string }[];
  desks: { id: string; projectKey: string; projectName: string }[];
}

export function peerNames(
  tag = Math.random()
    .toString(36)
    .slice(2, 6)
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, 'X'),
  orgBase = 100_000 + Math.floor(Math.random() * 800_000_000),
): PeerNames {
  const sup = `SUP${tag}`;
  const ops = `OPS${tag}`;
  return {
    tag,
    sup,
    ops,
    eng: `ENG${tag}`,
    orgs: [
      { id: String(orgBase + 1), name: 'Acme Corp' },
      { id: String(orgBase + 2), name: 'Globex' },
      { id: String(orgBase + 3), name: 'Unmapped Ltd' },
    ],
    desks: [
      { id: '1', projectKey: sup, projectName: 'Support' },
      { id: '2', projectKey: ops, projectName: 'Operations desk' },
    ],
  };
}

export const REQUEST_TYPES = [
  { id: '10', name: 'Get IT help', serviceDeskId: '1' },
  { id: '11', name: 'Report an incident', serviceDeskId: '1' },
  { id: '20', name: 'Ops request', serviceDeskId: '2' },
];

const AGENTS: PeerUser[] = [
  { accountId: 'agent-1', displayName: 'Alice Agent', emailAddress: 'alice@tracker.example' },
  { accountId: 'agent-2', displayName: 'Bob Builder', emailAddress: 'bob@tracker.example' },
  { accountId: 'agent-3', displayName: 'Carol Chen', emailAddress: 'carol@tracker.example' },
  { accountId: 'agent-4', displayName: 'dave Duarte', emailAddress: 'dave@tracker.example' },
];

/** A summary; a formula-like one starts with its `=` (what a spreadsheet would run). */
const summaryOf = (verb: string, what: string, n: number): string =>
  what.startsWith('=') ? `${what} #${n}` : `${verb} ${what} #${n}`;

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** The generated data set: a few hundred requests over two mapped organizations, one unmapped, engineering issues. */
export function generateIssues(
  now: number,
  names: PeerNames,
  opts: { perOrg?: [number, number, number]; seed?: number } = {},
): { issues: PeerIssue[]; customers: Map<string, PeerUser[]> } {
  const rand = seededRandom(opts.seed ?? 42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const [n1, n2, n3] = opts.perOrg ?? [160, 140, 12];
  const customers = new Map<string, PeerUser[]>();
  const [org1, org2, org3] = names.orgs.map((o) => o.id) as [string, string, string];
  for (const org of names.orgs) {
    const slug = org.name.toLowerCase().replace(/[^a-z]+/g, '');
    customers.set(
      org.id,
      Array.from({ length: 5 }, (_, i) => ({
        accountId: `cust-${org.id}-${i}`,
        displayName: `${org.name} customer ${i}`,
        emailAddress: `customer${i}.${names.tag.toLowerCase()}@${slug}.example`,
      })),
    );
  }
  const issues: PeerIssue[] = [];
  const counters: Record<string, number> = { [names.sup]: 0, [names.ops]: 0, [names.eng]: 0 };
  let id = 10_000;
  const make = (orgId: string | null, project: string): PeerIssue => {
    counters[project] = (counters[project] ?? 0) + 1;
    const key = `${project}-${counters[project]}`;
    const created = now - Math.floor(rand() * 120 * DAY) - HOUR;
    // A walk through the workflow from Open.
    const path: string[] = ['Open'];
    const steps = Math.floor(rand() * 6);
    for (let i = 0; i < steps; i++) {
      const options = TRANSITIONS[path[path.length - 1]!] ?? [];
      if (options.length === 0) break;
      path.push(pick(options).to);
    }
    const histories: PeerHistory[] = [];
    let t = created;
    let resolved: number | null = null;
    for (let i = 1; i < path.length; i++) {
      t += Math.floor(rand() * 60 * HOUR) + 60_000;
      if (t > now - 60_000) break;
      histories.push({ id: String(id * 10 + i), created: t, from: path[i - 1]!, to: path[i]! });
      if (categoryOf(path[i]!) === 'done' && categoryOf(path[i - 1]!) !== 'done') resolved = t;
      if (categoryOf(path[i]!) !== 'done') resolved = null;
    }
    const status = histories.length > 0 ? histories[histories.length - 1]!.to : 'Open';
    const customer = pick(customers.get(orgId ?? org3)!);
    const labels = ['vip', 'billing', 'network'].filter(() => rand() < 0.25);
    const sd = project === names.sup ? '1' : '2';
    id += 1;
    return {
      id: String(id),
      key,
      project,
      summary: summaryOf(
        pick(['Cannot', 'Please', 'Urgent:', 'Question about', 'Broken']),
        pick([
          'VPN access',
          'invoice PDF',
          'printer on floor 3',
          'password reset',
          'disk quota',
          '=SUM(A1) export',
          'mail relay',
        ]),
        counters[project] ?? 0,
      ),
      status,
      priority: pick(PRIORITIES),
      type: pick(TYPES),
      assignee: rand() < 0.8 ? pick(AGENTS) : null,
      reporter: customer,
      orgIds: orgId ? [orgId] : [],
      labels,
      serviceDeskId: sd,
      requestTypeId: sd === '1' ? pick(['10', '11']) : '20',
      created,
      updated: Math.max(created, ...histories.map((h) => h.created)) + Math.floor(rand() * 3) * 1000,
      resolved,
      due: rand() < 0.4 ? new Date(created + Math.floor(rand() * 10 + 1) * DAY).toISOString().slice(0, 10) : null,
      histories,
      comments: [
        {
          id: String(id * 100 + 1),
          body: `Hello, about ${key}`,
          public: true,
          author: customer,
          created: created + 1000,
        },
      ],
      approvals:
        rand() < 0.15
          ? [
              {
                id: String(id),
                name: 'Manager approval',
                finalDecision: 'pending',
                approvers: [{ approver: pick(AGENTS), approverDecision: 'pending' }],
                created: created + 2000,
                completed: null,
              },
            ]
          : [],
      attachments: [],
      links: [],
    };
  };
  for (let i = 0; i < n1; i++) issues.push(make(org1, names.sup));
  for (let i = 0; i < n2; i++) issues.push(make(org2, i % 4 === 3 ? names.ops : names.sup));
  for (let i = 0; i < n3; i++) issues.push(make(org3, names.sup));
  // Engineering issues, each linked to a support request.
  const supports = issues.filter((x) => x.project === names.sup);
  for (let i = 0; i < 30; i++) {
    const support = supports[Math.floor(rand() * supports.length)]!;
    if (support.links.length > 0) continue;
    counters[names.eng] = (counters[names.eng] ?? 0) + 1;
    const key = `${names.eng}-${counters[names.eng]}`;
    id += 1;
    support.links.push({ outward: key });
    issues.push({
      ...make(null, names.sup),
      id: String(id),
      key,
      project: names.eng,
      orgIds: [],
      serviceDeskId: null,
      requestTypeId: null,
      links: [{ inward: support.key }],
    });
    counters[names.sup] = (counters[names.sup] ?? 1) - 1;
  }
  return { issues, customers };
}

// ---------------------------------------------------------------------------------------------------------------

const jiraDate = (ms: number): string => new Date(ms).toISOString().replace('Z', '+0000');
const dateDto = (ms: number): { iso8601: string; jira: string; friendly: string; epochMillis: number } => ({
  iso8601: new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+0000'),
  jira: jiraDate(ms),
  friendly: new Date(ms).toUTCString(),
  epochMillis: ms,
});
const userDto = (u: PeerUser | null): unknown =>
  u
    ? {
        accountId: u.accountId,
        displayName: u.displayName,
        emailAddress: u.emailAddress,
        active: true,
        timeZone: 'UTC',
      }
    : null;

/** An SLA as the tracker reports it: completed cycles and the ongoing one. */
function slaDto(
  name: string,
  id: string,
  start: number | null,
  stop: number | null,
  goal: number,
  now: number,
  paused = false,
): unknown {
  if (start === null) return { id, name, _links: {}, completedCycles: [] };
  const cycle = (end: number): Record<string, unknown> => ({
    startTime: dateDto(start),
    breachTime: dateDto(start + goal),
    breached: end - start > goal,
    goalDuration: { millis: goal, friendly: `${goal / HOUR}h` },
    elapsedTime: { millis: end - start, friendly: `${Math.round((end - start) / 60_000)}m` },
    remainingTime: { millis: goal - (end - start), friendly: '' },
  });
  return stop !== null
    ? { id, name, _links: {}, completedCycles: [{ ...cycle(stop), stopTime: dateDto(stop) }] }
    : { id, name, _links: {}, completedCycles: [], ongoingCycle: { ...cycle(now), paused, withinCalendarHours: true } };
}

/**
 * Where a site keeps what the service desk reads. The minimal site is the spec's (Organizations at customfield_10002)
 * with nothing else around it; a Cloud site lists what a real one does: other SLAs ("Time to close after resolution"
 * before "Time to resolution", values in every search hit), look-alike fields, Organizations at its own id, and a
 * resolution SLA that pauses while the request waits for the customer.
 */
export interface PeerSite {
  organizations: string;
  requestType: string;
  firstResponse: string;
  resolution: string;
  /** The SLAs' names (a site may rename them). */
  names: { firstResponse: string; resolution: string };
  cloud: boolean;
  /** /field leaves the Organizations field out (searches and creates still know it): only a setting can name it. */
  unlistedOrganizations?: boolean;
}
const DEFAULT_SLA_NAMES = { firstResponse: 'Time to first response', resolution: 'Time to resolution' };
export const MINIMAL_SITE: PeerSite = {
  organizations: 'customfield_10002',
  requestType: 'customfield_10010',
  firstResponse: 'customfield_10020',
  resolution: 'customfield_10021',
  names: DEFAULT_SLA_NAMES,
  cloud: false,
};
export const CLOUD_SITE: PeerSite = {
  organizations: 'customfield_10106',
  requestType: 'customfield_10101',
  firstResponse: 'customfield_10135',
  resolution: 'customfield_10134',
  names: DEFAULT_SLA_NAMES,
  cloud: true,
};
/** The Cloud site's "Time to close after resolution": from the resolution until the request is closed. */
export const CLOSE_AFTER_RESOLUTION = {
  id: 'customfield_10133',
  name: 'Time to close after resolution',
  goal: 24 * 3_600_000,
};

/** When the request was closed (the move into Closed), while it is. */
export function closedAt(issue: PeerIssue): number | null {
  return issue.status === 'Closed' ? (issue.histories[issue.histories.length - 1]?.created ?? null) : null;
}

/** A Cloud site's resolution SLA pauses while the request waits for the customer. */
export const resolutionPaused = (site: PeerSite, issue: PeerIssue): boolean =>
  site.cloud && issue.resolved === null && issue.status === 'Waiting for customer';

const customId = (id: string): number => Number(id.replace('customfield_', ''));
const slaField = (id: string, name: string): Record<string, unknown> => ({
  id,
  key: id,
  name,
  untranslatedName: name,
  custom: true,
  orderable: true,
  navigable: true,
  searchable: true,
  clauseNames: [`cf[${customId(id)}]`, name],
  schema: {
    type: 'sd-servicelevelagreement',
    custom: 'com.atlassian.servicedesk:sd-sla-field',
    customId: customId(id),
  },
});
const customField = (id: string, name: string, schema: Record<string, unknown>): Record<string, unknown> => ({
  id,
  key: id,
  name,
  untranslatedName: name,
  custom: true,
  orderable: true,
  navigable: true,
  searchable: true,
  clauseNames: [`cf[${customId(id)}]`, name],
  schema: { ...schema, customId: customId(id) },
});

/** The ids of every field the site has (listed or not). */
const fieldIds = (site: PeerSite): Set<string> =>
  new Set([...fieldList(site, true).map((f) => String(f.id)), site.organizations]);

/** /rest/api/3/field of a site. */
function fieldList(site: PeerSite, slaInSearch: boolean): Record<string, unknown>[] {
  const system = (id: string, name: string, type: string): Record<string, unknown> => ({
    id,
    key: id,
    name,
    custom: false,
    orderable: true,
    navigable: true,
    searchable: true,
    clauseNames: [id],
    schema: { type, system: id },
  });
  const organizations = customField(site.organizations, 'Organizations', {
    type: 'array',
    items: 'sd-customerorganization',
    custom: 'com.atlassian.servicedesk:sd-customer-organizations',
  });
  const requestType = customField(site.requestType, 'Request Type', {
    type: 'sd-customerrequesttype',
    custom: 'com.atlassian.servicedesk:vp-origin',
  });
  const slas = slaInSearch
    ? [slaField(site.firstResponse, site.names.firstResponse), slaField(site.resolution, site.names.resolution)]
    : [];
  if (!site.cloud) return [system('summary', 'Summary', 'string'), organizations, requestType, ...slas];
  return [
    system('summary', 'Summary', 'string'),
    system('statuscategorychangedate', 'Status Category Changed', 'datetime'),
    ...(slaInSearch
      ? [
          slaField(CLOSE_AFTER_RESOLUTION.id, CLOSE_AFTER_RESOLUTION.name),
          slaField('customfield_10132', 'Time to approve normal change'),
        ]
      : []),
    customField('customfield_10100', 'Organization', {
      type: 'option',
      custom: 'com.atlassian.jira.plugin.system.customfieldtypes:select',
    }),
    customField('customfield_10103', 'Request participants', {
      type: 'array',
      items: 'user',
      custom: 'com.atlassian.servicedesk:sd-request-participants',
    }),
    customField('customfield_10104', 'Satisfaction', {
      type: 'sd-feedback',
      custom: 'com.atlassian.servicedesk:sd-request-feedback',
    }),
    requestType,
    customField('customfield_10105', 'Approvals', {
      type: 'sd-approvals',
      custom: 'com.atlassian.servicedesk.approvals-plugin:sd-approvals',
    }),
    ...slas.reverse(),
    ...(site.unlistedOrganizations ? [] : [organizations]),
    system('resolutiondate', 'Resolved', 'datetime'),
  ];
}

export function firstResponseAt(issue: PeerIssue): number | null {
  return issue.histories[0]?.created ?? null;
}

/** JQL's `yyyy/MM/dd HH:mm` read in `timeZone`, as epoch ms. */
function zonedToUtc(y: number, mo: number, d: number, h: number, mi: number, timeZone: string): number {
  const guess = Date.UTC(y, mo - 1, d, h, mi);
  const offsetAt = (t: number): number => {
    const p = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    }).formatToParts(t);
    const g = (k: string): number => Number(p.find((x) => x.type === k)?.value);
    return Date.UTC(g('year'), g('month') - 1, g('day'), g('hour'), g('minute'), g('second')) - t;
  };
  const first = guess - offsetAt(guess);
  return guess - offsetAt(first);
}

interface Fault {
  /** `body`: the parsed JSON body of the call, when it has one. */
  match: (method: string, path: string, body?: Record<string, unknown>) => boolean;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export class TrackerPeer {
  readonly issues = new Map<string, PeerIssue>();
  readonly customers: Map<string, PeerUser[]>;
  /** Every call: method, path (without query), when it arrived, and for a search the JQL it carried. */
  readonly log: { method: string; path: string; at: number; jql?: string }[] = [];
  readonly faults: Fault[] = [];
  readonly temporary = new Map<string, { filename: string; size: number; mimeType: string }>();
  /** The last body POSTed to create a request (to see what the service forwarded). */
  lastCreate: Record<string, unknown> | undefined;
  /** How many histories the search embeds per issue; more come from /issue/{key}/changelog. */
  changelogCap = 4;
  /** The largest page /issue/{key}/changelog serves (Jira's is 100); lowered to make a reader page through it. */
  changelogPageMax = 100;
  /**
   * false: a site whose SLA fields cannot be found: /field lists no SLA field and search hits carry none, so SLAs are
   * only on /servicedeskapi/request/{key}/sla. Set before the first sync.
   */
  slaInSearch = true;
  /** Where this site keeps the fields the service desk reads. */
  readonly site: PeerSite;
  /** Answer delay in ms (slow tracker). */
  delayMs = 0;
  private server: Server | undefined;
  private nextId = 900_000;
  url = '';
  readonly names: PeerNames;

  constructor(opts: { perOrg?: [number, number, number]; seed?: number; names?: PeerNames; site?: PeerSite } = {}) {
    this.names = opts.names ?? peerNames();
    this.site = opts.site ?? MINIMAL_SITE;
    const { issues, customers } = generateIssues(Date.now(), this.names, opts);
    for (const i of issues) this.issues.set(i.key, i);
    this.customers = customers;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.json(res, 500, { errorMessages: [String(err)] });
        else res.end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Calls whose path matches, counted. */
  count(method: string, path: RegExp): number {
    return this.log.filter((l) => l.method === method && path.test(l.path)).length;
  }

  /** Requests of the organizations (support projects only). */
  requestsOf(...orgIds: string[]): PeerIssue[] {
    return [...this.issues.values()].filter(
      (i) => i.serviceDeskId !== null && i.orgIds.some((o) => orgIds.includes(o)),
    );
  }

  /** A new Open request (what a customer raises in the portal), by default in the support desk for `orgIds`. */
  open(r: {
    orgIds: string[];
    at: number;
    summary?: string;
    desk?: PeerNames['desks'][number];
    requestTypeId?: string;
    priority?: string;
    reporter?: PeerUser;
    labels?: string[];
  }): PeerIssue {
    const desk = r.desk ?? this.names.desks[0]!;
    const n = [...this.issues.values()].filter((i) => i.project === desk.projectKey).length + 1;
    const issue: PeerIssue = {
      id: String(this.nextId++),
      key: `${desk.projectKey}-${n + 1000}`,
      project: desk.projectKey,
      summary: r.summary ?? `Fresh request #${n}`,
      status: 'Open',
      priority: r.priority ?? 'Medium',
      type: 'Service Request',
      assignee: null,
      reporter: r.reporter ??
        this.customers.get(r.orgIds[0] ?? '')?.[0] ?? {
          accountId: 'bot',
          displayName: 'Service bot',
          emailAddress: PEER_EMAIL,
        },
      orgIds: r.orgIds,
      labels: r.labels ?? [],
      serviceDeskId: desk.id,
      requestTypeId: r.requestTypeId ?? REQUEST_TYPES.find((t) => t.serviceDeskId === desk.id)!.id,
      created: r.at,
      updated: r.at,
      resolved: null,
      due: null,
      histories: [],
      comments: [],
      approvals: [],
      attachments: [],
      links: [],
    };
    this.issues.set(issue.key, issue);
    return issue;
  }

  /** Moves a request to a status now (what an agent does in the tracker itself). */
  move(key: string, to: string, at = Date.now()): void {
    const issue = this.issues.get(key)!;
    issue.histories.push({ id: String(this.nextId++), created: at, from: issue.status, to });
    if (categoryOf(to) === 'done' && categoryOf(issue.status) !== 'done') issue.resolved = at;
    if (categoryOf(to) !== 'done') issue.resolved = null;
    issue.status = to;
    issue.updated = at;
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { ...(text ? { 'content-type': 'application/json;charset=UTF-8' } : {}), ...headers });
    res.end(text);
  }

  private readonly read = new WeakMap<IncomingMessage, Record<string, unknown>>();

  private async body(req: IncomingMessage): Promise<Record<string, unknown>> {
    const already = this.read.get(req);
    if (already) return already;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  }

  private sla(issue: PeerIssue, now: number): { frt: unknown; ttr: unknown; close: unknown } {
    return {
      frt: slaDto(this.site.names.firstResponse, '1', issue.created, firstResponseAt(issue), FRT_GOAL_MS, now),
      ttr: slaDto(
        this.site.names.resolution,
        '2',
        issue.created,
        issue.resolved,
        TTR_GOAL_MS,
        now,
        resolutionPaused(this.site, issue),
      ),
      close: slaDto(
        CLOSE_AFTER_RESOLUTION.name,
        '3',
        issue.resolved,
        closedAt(issue),
        CLOSE_AFTER_RESOLUTION.goal,
        now,
      ),
    };
  }

  /** The first custom field of a create's values that the site does not have (Jira refuses the request then). */
  private unknownField(values: Record<string, unknown>): string | undefined {
    const known = fieldIds(this.site);
    return Object.keys(values).find((k) => k.startsWith('customfield_') && !known.has(k));
  }

  private platformIssue(issue: PeerIssue, now: number, withChangelog: boolean): unknown {
    const status = statusByName.get(issue.status)!;
    const { frt, ttr, close } = this.sla(issue, now);
    const rt = REQUEST_TYPES.find((r) => r.id === issue.requestTypeId);
    const histories = issue.histories.map((h) => ({
      id: h.id,
      author: userDto(AGENTS[0]!),
      created: jiraDate(h.created),
      items: [
        {
          field: 'status',
          fieldtype: 'jira',
          fieldId: 'status',
          from: statusByName.get(h.from)!.id,
          fromString: h.from,
          to: statusByName.get(h.to)!.id,
          toString: h.to,
        },
      ],
    }));
    return {
      expand: 'renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations',
      id: issue.id,
      self: `${this.url}/rest/api/3/issue/${issue.id}`,
      key: issue.key,
      fields: {
        summary: issue.summary,
        status: {
          id: status.id,
          name: status.name,
          statusCategory: {
            id: 2,
            key: status.category,
            name: { new: 'To Do', indeterminate: 'In Progress', done: 'Done' }[status.category],
          },
        },
        priority: {
          id: String(PRIORITIES.indexOf(issue.priority as (typeof PRIORITIES)[number]) + 1),
          name: issue.priority,
        },
        issuetype: { id: String(TYPES.indexOf(issue.type as (typeof TYPES)[number]) + 1), name: issue.type },
        assignee: userDto(issue.assignee),
        reporter: userDto(issue.reporter),
        created: jiraDate(issue.created),
        updated: jiraDate(issue.updated),
        resolutiondate: issue.resolved ? jiraDate(issue.resolved) : null,
        duedate: issue.due,
        labels: issue.labels,
        project: { id: issue.project, key: issue.project, name: issue.project },
        [this.site.organizations]: issue.orgIds.map((o) => ({
          id: Number(o),
          name: this.names.orgs.find((x) => x.id === o)?.name ?? o,
          _links: {},
        })),
        [this.site.requestType]: rt
          ? {
              _links: {},
              requestType: { id: rt.id, name: rt.name, serviceDeskId: rt.serviceDeskId },
              currentStatus: { status: issue.status },
            }
          : null,
        ...(this.slaInSearch
          ? {
              [this.site.firstResponse]: issue.serviceDeskId ? frt : null,
              [this.site.resolution]: issue.serviceDeskId ? ttr : null,
            }
          : {}),
        ...(this.slaInSearch && this.site.cloud
          ? {
              [CLOSE_AFTER_RESOLUTION.id]: issue.serviceDeskId ? close : null,
              customfield_10100: null,
              customfield_10104: null,
            }
          : {}),
        issuelinks: issue.links.map((l, i) => ({
          id: String(i + 1),
          type: { name: 'Relates', inward: 'relates to', outward: 'relates to' },
          ...(l.outward ? { outwardIssue: { key: l.outward, fields: {} } } : {}),
          ...(l.inward ? { inwardIssue: { key: l.inward, fields: {} } } : {}),
        })),
      },
      ...(withChangelog
        ? {
            changelog: {
              startAt: 0,
              maxResults: this.changelogCap,
              total: histories.length,
              histories: histories.slice(-this.changelogCap),
            },
          }
        : {}),
    };
  }

  private customerRequest(issue: PeerIssue): unknown {
    const status = statusByName.get(issue.status)!;
    const statusDate = issue.histories[issue.histories.length - 1]?.created ?? issue.created;
    return {
      _expands: ['participant', 'status', 'sla', 'requestType', 'serviceDesk', 'attachment', 'action', 'comment'],
      issueId: issue.id,
      issueKey: issue.key,
      requestTypeId: issue.requestTypeId,
      serviceDeskId: issue.serviceDeskId,
      createdDate: dateDto(issue.created),
      reporter: userDto(issue.reporter),
      requestFieldValues: [
        { fieldId: 'summary', label: 'Summary', value: issue.summary },
        {
          fieldId: this.site.organizations,
          label: 'Organizations',
          value: issue.orgIds.map((o) => ({ id: Number(o), name: this.names.orgs.find((x) => x.id === o)?.name })),
        },
      ],
      currentStatus: {
        status: status.name,
        statusCategory: status.category.toUpperCase(),
        statusDate: dateDto(statusDate),
      },
      _links: {
        web: `${this.url}/servicedesk/customer/portal/${issue.serviceDeskId}/${issue.key}`,
        self: `${this.url}/rest/servicedeskapi/request/${issue.id}`,
      },
    };
  }

  private paged<T>(values: T[], start: number, limit: number): unknown {
    const page = values.slice(start, start + limit);
    return {
      _expands: [],
      size: page.length,
      start,
      limit,
      isLastPage: start + page.length >= values.length,
      _links: { base: `${this.url}/rest/servicedeskapi` },
      values: page,
    };
  }

  private search(jql: string, token: string | undefined, maxResults: number, now: number): unknown {
    const org = new RegExp(`cf\\[${customId(this.site.organizations)}\\]\\s*=\\s*(\\d+)`).exec(jql)?.[1];
    const since = /updated\s*>=\s*"(\d{4})\/(\d\d)\/(\d\d) (\d\d):(\d\d)"/.exec(jql);
    const sinceMs = since
      ? zonedToUtc(
          Number(since[1]),
          Number(since[2]),
          Number(since[3]),
          Number(since[4]),
          Number(since[5]),
          PEER_TIMEZONE,
        )
      : undefined;
    const all = [...this.issues.values()]
      .filter((i) => (org ? i.orgIds.includes(org) : true) && (sinceMs === undefined || i.updated >= sinceMs))
      .sort((a, b) => a.updated - b.updated || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const offset = token ? Number(Buffer.from(token, 'base64url').toString()) : 0;
    const size = Math.min(Math.max(1, maxResults), 100);
    const page = all.slice(offset, offset + size);
    const last = offset + page.length >= all.length;
    return {
      issues: page.map((i) => this.platformIssue(i, now, true)),
      ...(last ? {} : { nextPageToken: Buffer.from(String(offset + page.length)).toString('base64url') }),
      isLast: last,
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://peer');
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const now = Date.now();
    const entry: (typeof this.log)[number] = { method, path, at: now };
    this.log.push(entry);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const expected = `Basic ${Buffer.from(`${PEER_EMAIL}:${PEER_TOKEN}`).toString('base64')}`;
    if (req.headers.authorization !== expected)
      return this.json(res, 401, {
        errorMessages: ['You are not authenticated. Authentication required to perform this operation.'],
        errors: {},
      });
    // A JSON body is read up front so faults can look at it (multipart uploads stay streams).
    const json =
      method === 'POST' && String(req.headers['content-type'] ?? '').startsWith('application/json')
        ? await this.body(req)
        : undefined;
    if (json) this.read.set(req, json);
    const jql = path === '/rest/api/3/search/jql' ? (json?.jql ?? url.searchParams.get('jql')) : undefined;
    if (typeof jql === 'string') entry.jql = jql;
    const fault = this.faults.findIndex((f) => f.match(method, path, json));
    if (fault >= 0) {
      const f = this.faults.splice(fault, 1)[0]!;
      req.resume();
      return this.json(res, f.status, f.body ?? { errorMessages: [`injected ${f.status}`] }, f.headers);
    }
    const q = url.searchParams;
    const int = (name: string, dflt: number): number => (q.has(name) ? Number(q.get(name)) : dflt);
    let m: RegExpExecArray | null;
    const issueOr404 = (key: string, serviceDesk: boolean): PeerIssue | undefined => {
      const issue = this.issues.get(decodeURIComponent(key));
      if (!issue || (serviceDesk && !issue.serviceDeskId)) {
        this.json(
          res,
          404,
          serviceDesk
            ? {
                errorMessage: 'Request does not exist or you do not have permission to see it.',
                i18nErrorMessage: { i18nKey: 'sd.request.error.not.found', parameters: [] },
              }
            : { errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} },
        );
        return undefined;
      }
      return issue;
    };

    // ---- platform ----------------------------------------------------------------------------------------
    if (method === 'GET' && path === '/rest/api/3/myself')
      return this.json(res, 200, {
        accountId: 'bot',
        emailAddress: PEER_EMAIL,
        displayName: 'Service bot',
        timeZone: PEER_TIMEZONE,
        active: true,
      });
    if (method === 'GET' && path === '/rest/api/3/field') {
      return this.json(res, 200, fieldList(this.site, this.slaInSearch));
    }
    if (method === 'GET' && path === '/rest/api/3/status') {
      return this.json(
        res,
        200,
        STATUSES.map((s) => ({ id: s.id, name: s.name, statusCategory: { id: 1, key: s.category, name: s.category } })),
      );
    }
    if (path === '/rest/api/3/search/jql' && (method === 'POST' || method === 'GET')) {
      const b =
        method === 'POST'
          ? await this.body(req)
          : {
              jql: q.get('jql'),
              nextPageToken: q.get('nextPageToken') ?? undefined,
              maxResults: int('maxResults', 50),
            };
      if (typeof b.jql !== 'string' || !/ORDER BY updated ASC/.test(b.jql))
        return this.json(res, 400, { errorMessages: ['Unbounded or unsupported JQL'], errors: {} });
      const known = new Set([...fieldIds(this.site)].map(customId));
      const unknown = [...b.jql.matchAll(/cf\[(\d+)\]/g)].find((x) => !known.has(Number(x[1])));
      if (unknown)
        return this.json(res, 400, {
          errorMessages: [`Field '${unknown[0]}' does not exist or you do not have permission to view it.`],
          errors: {},
        });
      return this.json(
        res,
        200,
        this.search(
          b.jql,
          typeof b.nextPageToken === 'string' ? b.nextPageToken : undefined,
          Number(b.maxResults ?? 50),
          now,
        ),
      );
    }
    if (method === 'GET' && (m = /^\/rest\/api\/3\/issue\/([^/]+)\/changelog$/.exec(path))) {
      const issue = issueOr404(m[1]!, false);
      if (!issue) return;
      const all = issue.histories;
      const values = all.map((h) => ({
        id: h.id,
        created: jiraDate(h.created),
        items: [
          {
            field: 'status',
            fieldId: 'status',
            from: statusByName.get(h.from)!.id,
            fromString: h.from,
            to: statusByName.get(h.to)!.id,
            toString: h.to,
          },
        ],
      }));
      const startAt = int('startAt', 0);
      const max = Math.min(int('maxResults', 100), this.changelogPageMax);
      const page = values.slice(startAt, startAt + max);
      return this.json(res, 200, {
        self: '',
        maxResults: max,
        startAt,
        total: values.length,
        isLast: startAt + page.length >= values.length,
        values: page,
      });
    }
    if (method === 'GET' && (m = /^\/rest\/api\/3\/issue\/([^/]+)$/.exec(path))) {
      const issue = issueOr404(m[1]!, false);
      if (!issue) return;
      return this.json(res, 200, this.platformIssue(issue, now, false));
    }

    // ---- service desk ------------------------------------------------------------------------------------
    if (method === 'GET' && (m = /^\/rest\/servicedeskapi\/organization\/(\d+)$/.exec(path))) {
      const org = this.names.orgs.find((o) => o.id === m![1]);
      return org
        ? this.json(res, 200, { id: org.id, name: org.name, _links: {} })
        : this.json(res, 404, { errorMessage: 'Organization does not exist.' });
    }
    if (method === 'GET' && path === '/rest/servicedeskapi/organization')
      return this.json(res, 200, this.paged(this.names.orgs, int('start', 0), int('limit', 50)));
    if (method === 'GET' && (m = /^\/rest\/servicedeskapi\/servicedesk\/(\d+)$/.exec(path))) {
      const sd = this.names.desks.find((s) => s.id === m![1]);
      return sd
        ? this.json(res, 200, {
            id: sd.id,
            projectId: `100${sd.id}`,
            projectName: sd.projectName,
            projectKey: sd.projectKey,
            _links: {},
          })
        : this.json(res, 404, { errorMessage: 'Service desk does not exist.' });
    }
    if (method === 'POST' && (m = /^\/rest\/servicedeskapi\/servicedesk\/(\d+)\/attachTemporaryFile$/.exec(path))) {
      if (!this.names.desks.some((s) => s.id === m![1]))
        return this.json(res, 404, { errorMessage: 'Service desk does not exist.' });
      if (req.headers['x-atlassian-token'] !== 'no-check')
        return this.json(res, 403, { errorMessage: 'XSRF check failed' });
      const files = await new Promise<{ filename: string; size: number; mimeType: string }[]>((resolve, reject) => {
        const out: { filename: string; size: number; mimeType: string }[] = [];
        const bb = new Busboy({ headers: req.headers as { 'content-type': string } });
        bb.on(
          'file',
          (_field: string, stream: NodeJS.ReadableStream, filename: string, _enc: string, mimeType: string) => {
            let size = 0;
            stream.on('data', (c: Buffer) => (size += c.length));
            stream.on('end', () => out.push({ filename, size, mimeType }));
          },
        );
        bb.on('finish', () => resolve(out));
        bb.on('error', reject);
        req.pipe(bb);
      });
      const temporaryAttachments = files.map((f) => {
        const tid = `temp${this.nextId++}`;
        this.temporary.set(tid, f);
        return { temporaryAttachmentId: tid, fileName: f.filename };
      });
      return this.json(res, 201, { temporaryAttachments });
    }
    if (
      method === 'GET' &&
      (m = /^\/rest\/servicedeskapi\/servicedesk\/(\d+)\/requesttype\/(\d+)\/field$/.exec(path))
    ) {
      const rt = REQUEST_TYPES.find((r) => r.id === m![2] && r.serviceDeskId === m![1]);
      if (!rt) return this.json(res, 404, { errorMessage: 'Request type does not exist.' });
      return this.json(res, 200, {
        requestTypeFields: [
          {
            fieldId: 'summary',
            name: 'Summary',
            description: '',
            required: true,
            defaultValues: [],
            validValues: [],
            jiraSchema: { type: 'string', system: 'summary' },
            visible: true,
          },
          {
            fieldId: 'description',
            name: 'Description',
            description: 'Tell us more',
            required: false,
            defaultValues: [],
            validValues: [],
            jiraSchema: { type: 'string', system: 'description' },
            visible: true,
          },
          {
            fieldId: 'priority',
            name: 'Priority',
            description: '',
            required: false,
            defaultValues: [{ value: '3', label: 'Medium', children: [] }],
            validValues: PRIORITIES.map((p, i) => ({ value: String(i + 1), label: p, children: [] })),
            jiraSchema: { type: 'priority', system: 'priority' },
            visible: true,
          },
        ],
        canRaiseOnBehalfOf: true,
        canAddRequestParticipants: true,
      });
    }
    if (method === 'POST' && path === '/rest/servicedeskapi/request') {
      const b = await this.body(req);
      this.lastCreate = b;
      const sd = this.names.desks.find((s) => s.id === b.serviceDeskId);
      const rt = REQUEST_TYPES.find((r) => r.id === b.requestTypeId && r.serviceDeskId === b.serviceDeskId);
      if (!sd || !rt)
        return this.json(res, 400, {
          errorMessage: 'The request type you are trying to use does not exist in this service desk.',
        });
      const values = (b.requestFieldValues ?? {}) as Record<string, unknown>;
      if (typeof values.summary !== 'string' || values.summary === '')
        return this.json(res, 400, { errorMessage: 'Summary: You must specify a summary of the issue.' });
      const unknownField = this.unknownField(values);
      if (unknownField)
        return this.json(res, 400, {
          errorMessage: `Field '${unknownField}' cannot be set. It is not on the appropriate screen, or unknown.`,
        });
      const orgValue = values[this.site.organizations];
      const orgIds = Array.isArray(orgValue) ? orgValue.map(String) : [];
      const onBehalf = typeof b.raiseOnBehalfOf === 'string' ? b.raiseOnBehalfOf : undefined;
      const everyone = [...this.customers.values()].flat();
      const reporter = onBehalf
        ? (everyone.find((c) => c.accountId === onBehalf || c.emailAddress === onBehalf) ?? {
            accountId: onBehalf,
            displayName: onBehalf,
            emailAddress: onBehalf,
          })
        : { accountId: 'bot', displayName: 'Service bot', emailAddress: PEER_EMAIL };
      const issue = this.open({
        desk: sd,
        requestTypeId: rt.id,
        summary: values.summary,
        priority: PRIORITIES[Number((values.priority as { id?: string } | undefined)?.id ?? 3) - 1] ?? 'Medium',
        reporter,
        orgIds,
        labels: Array.isArray(values.labels) ? values.labels.map(String) : [],
        at: now,
      });
      return this.json(res, 201, this.customerRequest(issue));
    }
    if ((m = /^\/rest\/servicedeskapi\/request\/([^/]+)(?:\/(.+))?$/.exec(path))) {
      const issue = issueOr404(m[1]!, true);
      if (!issue) return;
      const sub = m[2] ?? '';
      if (method === 'GET' && sub === '') return this.json(res, 200, this.customerRequest(issue));
      if (method === 'GET' && sub === 'sla') {
        const { frt, ttr, close } = this.sla(issue, now);
        return this.json(
          res,
          200,
          this.paged(this.site.cloud ? [close, frt, ttr] : [frt, ttr], int('start', 0), int('limit', 50)),
        );
      }
      if (sub === 'comment' && method === 'GET') {
        const list = issue.comments.map((c) => ({
          id: c.id,
          body: c.body,
          public: c.public,
          author: userDto(c.author),
          created: dateDto(c.created),
          _links: {},
        }));
        return this.json(res, 200, this.paged(list, int('start', 0), int('limit', 50)));
      }
      if (sub === 'comment' && method === 'POST') {
        const b = await this.body(req);
        if (typeof b.body !== 'string' || b.body === '')
          return this.json(res, 400, { errorMessage: 'Comment body is required.' });
        const c = {
          id: String(this.nextId++),
          body: b.body,
          public: b.public !== false,
          author: { accountId: 'bot', displayName: 'Service bot', emailAddress: PEER_EMAIL },
          created: now,
        };
        issue.comments.push(c);
        issue.updated = now;
        return this.json(res, 201, {
          id: c.id,
          body: c.body,
          public: c.public,
          author: userDto(c.author),
          created: dateDto(c.created),
          _links: {},
        });
      }
      if (sub === 'transition' && method === 'GET') {
        return this.json(
          res,
          200,
          this.paged(
            (TRANSITIONS[issue.status] ?? []).map((t) => ({ id: t.id, name: t.name })),
            int('start', 0),
            int('limit', 50),
          ),
        );
      }
      if (sub === 'transition' && method === 'POST') {
        const b = await this.body(req);
        const t = (TRANSITIONS[issue.status] ?? []).find((x) => x.id === b.id);
        if (!t) return this.json(res, 400, { errorMessage: 'The transition is not valid for this request.' });
        this.move(issue.key, t.to, now);
        const extra = b.additionalComment as { body?: string } | undefined;
        if (extra?.body)
          issue.comments.push({
            id: String(this.nextId++),
            body: extra.body,
            public: true,
            author: { accountId: 'bot', displayName: 'Service bot', emailAddress: PEER_EMAIL },
            created: now,
          });
        return this.json(res, 204, undefined);
      }
      if (sub === 'approval' && method === 'GET') {
        const list = issue.approvals.map((a) => ({
          id: a.id,
          name: a.name,
          finalDecision: a.finalDecision,
          canAnswerApproval: a.finalDecision === 'pending',
          approvers: a.approvers.map((x) => ({ approver: userDto(x.approver), approverDecision: x.approverDecision })),
          createdDate: dateDto(a.created),
          ...(a.completed ? { completedDate: dateDto(a.completed) } : {}),
          _links: {},
        }));
        return this.json(res, 200, this.paged(list, int('start', 0), int('limit', 50)));
      }
      if ((m = /^approval\/(\d+)$/.exec(sub)) && method === 'POST') {
        const a = issue.approvals.find((x) => x.id === m![1]);
        if (!a) return this.json(res, 404, { errorMessage: 'Approval does not exist.' });
        const b = await this.body(req);
        if (b.decision !== 'approve' && b.decision !== 'decline')
          return this.json(res, 400, { errorMessage: 'Decision must be approve or decline.' });
        if (a.finalDecision !== 'pending')
          return this.json(res, 400, { errorMessage: 'This approval has already been decided.' });
        a.finalDecision = b.decision === 'approve' ? 'approved' : 'declined';
        a.completed = now;
        for (const x of a.approvers) x.approverDecision = a.finalDecision;
        issue.updated = now;
        return this.json(res, 200, {
          id: a.id,
          name: a.name,
          finalDecision: a.finalDecision,
          canAnswerApproval: false,
          approvers: a.approvers.map((x) => ({ approver: userDto(x.approver), approverDecision: x.approverDecision })),
          createdDate: dateDto(a.created),
          completedDate: dateDto(now),
          _links: {},
        });
      }
      if (sub === 'attachment' && method === 'GET') {
        const list = issue.attachments.map((a) => ({
          filename: a.filename,
          author: userDto(a.author),
          created: dateDto(a.created),
          size: a.size,
          mimeType: a.mimeType,
          _links: {},
        }));
        return this.json(res, 200, this.paged(list, int('start', 0), int('limit', 50)));
      }
      if (sub === 'attachment' && method === 'POST') {
        const b = await this.body(req);
        const ids = Array.isArray(b.temporaryAttachmentIds) ? b.temporaryAttachmentIds.map(String) : [];
        const files = ids.map((tid) => this.temporary.get(tid));
        if (ids.length === 0 || files.some((f) => !f))
          return this.json(res, 400, { errorMessage: 'Temporary attachment not found.' });
        const added = files.map((f) => ({
          filename: f!.filename,
          size: f!.size,
          mimeType: f!.mimeType,
          created: now,
          author: { accountId: 'bot', displayName: 'Service bot', emailAddress: PEER_EMAIL },
        }));
        for (const tid of ids) this.temporary.delete(tid);
        issue.attachments.push(...added);
        issue.updated = now;
        return this.json(res, 201, {
          attachments: this.paged(
            added.map((a) => ({
              filename: a.filename,
              author: userDto(a.author),
              created: dateDto(a.created),
              size: a.size,
              mimeType: a.mimeType,
              _links: {},
            })),
            0,
            added.length,
          ),
        });
      }
    }
    return this.json(res, 404, { errorMessages: [`no route ${method} ${path}`] });
  }
}
