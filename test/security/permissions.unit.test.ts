import type { Permissions } from '@nats-io/jwt';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  adminPermissions,
  agentInboxPrefix,
  agentPermissions,
  agentSubjects,
  servicePermissions,
  systemPermissions,
  toolInboxPrefix,
  toolPermissions,
} from '../../platform/broker/permissions.ts';
import { namespace, setNamespace, wireRequestSubject } from '../../platform/namespace.ts';
import { catalogue } from '../../contracts/catalogue.ts';
import { TELEMETRY_KINDS } from '../../contracts/domains/agent-telemetry.ts';
import { allStreams, streams, telemetrySubject } from '../../contracts/streams.ts';

/**
 * The broker permissions (platform/broker/permissions.ts) against what they must fit: the streams of
 * contracts/streams.ts, the catalogue's request subjects, the agents' telemetry subjects, and the JetStream calls the
 * service code makes. Read as nats-server reads them (token by token, `*` one token, `>` the rest); the server itself
 * enforcing them: broker.test.ts.
 */

/** NATS subject matching: `*` is any one token, a final `>` one or more tokens. */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return i === p.length - 1 && s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

/** What the server lets the user do with `subject`: an allow entry matches and no deny entry does. */
function may(perms: Permissions, what: 'pub' | 'sub', subject: string): boolean {
  const { allow = [], deny = [] } = perms[what] ?? {};
  return allow.some((a) => matches(a, subject)) && !deny.some((d) => matches(d, subject));
}

const service = servicePermissions();
const publishes = (subject: string): boolean => may(service, 'pub', subject);

describe('the subject matcher these checks read permissions with', () => {
  it('takes * as one token and a final > as one or more', () => {
    expect(matches('svc.>', 'svc.fleet.clients.list')).toBe(true);
    expect(matches('svc.>', 'svc')).toBe(false);
    expect(matches('*.svc.>', 'ns.svc.fleet.clients.list')).toBe(true);
    expect(matches('*.svc.>', 'a.b.svc.x')).toBe(false);
    expect(matches('$JS.API.STREAM.INFO.*', '$JS.API.STREAM.INFO.SVC_WORK')).toBe(true);
    expect(matches('$JS.API.STREAM.INFO.*', '$JS.API.STREAM.INFO.SVC_WORK.x')).toBe(false);
    expect(matches('$JS.API.STREAM.INFO.*', '$JS.API.STREAM.INFO')).toBe(false);
  });
});

describe('the services’ JetStream rights', () => {
  it.each(allStreams.map((s) => [s.name]))('%s: created, updated and read, never deleted', (name) => {
    for (const call of ['CREATE', 'UPDATE', 'INFO', 'MSG.GET'])
      expect(publishes(`$JS.API.STREAM.${call}.${name}`), call).toBe(true);
    expect(publishes(`$JS.API.DIRECT.GET.${name}`)).toBe(true);
    expect(publishes(`$JS.API.DIRECT.GET.${name}.svc.evt.x`)).toBe(true);
    expect(publishes(`$JS.API.STREAM.DELETE.${name}`)).toBe(false);
    expect(publishes(`$JS.API.STREAM.LEADER.STEPDOWN.${name}`)).toBe(false);
    expect(publishes(`$JS.API.STREAM.PEER.REMOVE.${name}`)).toBe(false);
  });

  it('purge only the upload stream, and delete single messages only from the dead-letter stream', () => {
    for (const { name } of allStreams) {
      expect(publishes(`$JS.API.STREAM.PURGE.${name}`), name).toBe(name === streams.SVC_UPLOADS.name);
      expect(publishes(`$JS.API.STREAM.MSG.DELETE.${name}`), name).toBe(name === streams.SVC_DLQ.name);
    }
  });

  it('name in their stream-specific calls only streams contracts/streams.ts declares', () => {
    const declared = new Set(allStreams.map((s) => s.name));
    const named = service
      .pub!.allow!.filter((a) => /^\$JS\.API\..*\.(PURGE|DELETE)\.[A-Z0-9_]+$/.test(a))
      .map((a) => a.split('.').at(-1)!);
    expect(named.length).toBeGreaterThan(0);
    for (const name of named) expect(declared, name).toContain(name);
  });

  it('list and name streams, own their consumers (the lease buckets’ too), and reach the KV API', () => {
    for (const s of ['$JS.API.INFO', '$JS.API.STREAM.NAMES', '$JS.API.STREAM.LIST']) expect(publishes(s), s).toBe(true);
    for (const s of [
      '$JS.API.CONSUMER.CREATE.SVC_WORK.mailer.svc.work.mail',
      '$JS.API.CONSUMER.DURABLE.CREATE.SVC_EVENTS.audit',
      '$JS.API.CONSUMER.INFO.SVC_EVENTS.audit',
      '$JS.API.CONSUMER.MSG.NEXT.SVC_EVENTS.audit',
      '$JS.API.CONSUMER.LEADER.STEPDOWN.SVC_EVENTS.audit',
      '$JS.API.CONSUMER.DELETE.SVC_EVENTS.audit',
      '$JS.API.STREAM.CREATE.KV_leases',
      '$KV.leases.fleet-metrics',
      '$JS.ACK.SVC_EVENTS.audit.1.2.3.4.5',
    ])
      expect(publishes(s), s).toBe(true);
    expect(publishes('$JS.API.STREAM.DELETE.KV_leases')).toBe(false);
    expect(publishes('$JS.API.ACCOUNT.PURGE')).toBe(false);
  });

  it('cover what the service code calls: no stream deleted, purges and message deletes only where allowed', () => {
    const calls: string[] = [];
    const sources = ['actors', 'platform', 'gateway'].flatMap((dir) =>
      readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join(dir, f)),
    );
    for (const file of [...sources, 'main.ts']) {
      const text = readFileSync(file, 'utf8');
      expect(text, `${file} deletes a stream`).not.toMatch(/\.streams\s*\.delete\(/);
      for (const m of text.matchAll(/\.streams\s*\.(purge|deleteMessage)\(\s*([A-Za-z_$][\w$.]*)/g)) {
        const [, call, arg] = m as unknown as [string, string, string];
        // The stream named through the table, directly or by a constant of the same file.
        const constant = new RegExp(`const ${arg.replaceAll('$', '\\$')} = streams\\.(\\w+)\\.name`).exec(text)?.[1];
        const name = /^streams\.(\w+)\.name$/.exec(arg)?.[1] ?? constant;
        expect(name, `${file}: ${call}(${arg}): name the stream as streams.<NAME>.name`).toBeDefined();
        const api = call === 'purge' ? 'STREAM.PURGE' : 'STREAM.MSG.DELETE';
        expect(publishes(`$JS.API.${api}.${name}`), `${file}: ${call} on ${name}`).toBe(true);
        calls.push(`${call} ${name}`);
      }
    }
    // The two the list was narrowed to (an upload dropped, a dead letter replayed): still there, still found.
    expect(new Set(calls)).toEqual(new Set(['purge SVC_UPLOADS', 'deleteMessage SVC_DLQ']));
  });
});

describe('the services’ subjects', () => {
  const before = namespace();
  afterEach(() => setNamespace(before));

  it('serve and call every request subject of the catalogue, without a namespace and within one', () => {
    for (const ns of ['', 't1a2b3c4', 'bench', 'staging_2']) {
      setNamespace(ns);
      for (const subject of Object.keys(catalogue)) {
        const wire = wireRequestSubject(subject);
        expect(may(service, 'pub', wire), wire).toBe(true);
        expect(may(service, 'sub', wire), wire).toBe(true);
      }
    }
  });

  it('answer every inbox under _INBOX. (agents’ and tools’ too) and across imports, with no response rights', () => {
    expect(service.resp).toBeUndefined();
    for (const inbox of [`${agentInboxPrefix('a1')}.x`, `${toolInboxPrefix('t1')}.x`, '_INBOX.abc.1', '_R_.abc.xyz'])
      expect(publishes(inbox), inbox).toBe(true);
    expect(may(service, 'sub', '_INBOX.abc.1')).toBe(true);
    expect(publishes('$SYS.REQ.ACCOUNT.A.CLAIMS.UPDATE')).toBe(false);
  });
});

describe('an agent’s rights', () => {
  const agent = agentPermissions('agent-1');

  it('publish its own telemetry, every kind of it, which the telemetry stream stores; and fetch its own config', () => {
    const telemetry = streams.SVC_TELEMETRY.subjects;
    for (const kind of TELEMETRY_KINDS) {
      const own = telemetrySubject('agent-1', kind);
      expect(may(agent, 'pub', own), own).toBe(true);
      expect(
        telemetry.some((f) => matches(f, own)),
        own,
      ).toBe(true);
      expect(may(agent, 'pub', telemetrySubject('agent-2', kind))).toBe(false);
    }
    const { configFetch, commands } = agentSubjects('agent-1');
    expect(may(agent, 'pub', configFetch)).toBe(true);
    expect(may(agent, 'pub', agentSubjects('agent-2').configFetch)).toBe(false);
    // A request no stream captures, or JetStream would answer it with a PubAck; so are the commands.
    for (const s of [configFetch, commands])
      expect(
        allStreams.filter((st) => st.subjects.some((f) => matches(f, s))).map((st) => st.name),
        s,
      ).toEqual([]);
  });

  it('receive only its own commands and replies, and answer a command on the reply subject it came with', () => {
    expect(may(agent, 'sub', agentSubjects('agent-1').commands)).toBe(true);
    expect(may(agent, 'sub', `${agentInboxPrefix('agent-1')}.r1`)).toBe(true);
    for (const s of [agentSubjects('agent-2').commands, `${agentInboxPrefix('agent-2')}.r1`, '_INBOX.>', 'svc.>'])
      expect(may(agent, 'sub', s), s).toBe(false);
    for (const s of ['svc.fleet.clients.list', '_INBOX.x.1', '$JS.API.INFO', '$KV.leases.x', 'svc.evt.audit'])
      expect(may(agent, 'pub', s), s).toBe(false);
    expect(agent.resp).toEqual({ max: 1, ttl: 60_000_000_000 });
  });

  it.each(['', 'a.b', 'a*', 'a>', 'a b', 'x'.repeat(65)])('refuses the id %j, which would widen its subjects', (id) => {
    expect(() => agentPermissions(id)).toThrow(/agent id/);
  });
});

describe('a tool’s rights', () => {
  const tool = toolPermissions('board');

  it('read events and its own inbox, and ask the services what they are, nothing else', () => {
    for (const s of ['svc.evt.audit.entry', `${toolInboxPrefix('board')}.1`]) expect(may(tool, 'sub', s), s).toBe(true);
    for (const s of ['svc.work.mail', `${toolInboxPrefix('other')}.1`, '_INBOX.x', '$SRV.PING'])
      expect(may(tool, 'sub', s), s).toBe(false);
    for (const s of ['$SRV.PING', '$SRV.INFO.fleet', '$SRV.STATS.fleet.id1']) expect(may(tool, 'pub', s), s).toBe(true);
    for (const s of ['svc.fleet.clients.list', 'svc.evt.x', '$JS.API.INFO', '$SRV.REQ'])
      expect(may(tool, 'pub', s), s).toBe(false);
    expect(() => toolPermissions('a.b')).toThrow(/tool name/);
  });
});

describe('the admin and system users', () => {
  it('admin: everything, deletes and purges included; system: account claims only', () => {
    expect(may(adminPermissions(), 'pub', `$JS.API.STREAM.DELETE.${streams.SVC_EVENTS.name}`)).toBe(true);
    const system = systemPermissions();
    expect(may(system, 'pub', '$SYS.REQ.ACCOUNT.ABC.CLAIMS.UPDATE')).toBe(true);
    expect(may(system, 'pub', 'svc.fleet.clients.list')).toBe(false);
  });
});
