import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { publishEvent } from '../../platform/jetstream.ts';
import { createUser, tokenFor } from '../support/identity.ts';
import { capturingServiceLogger, repeatedTopLevelKeys } from '../support/log-capture.ts';
import { startTestSystem } from '../support/system.ts';

/** Log pipelines warn on a line with a key twice (JSON parsers keep one of them): each key once, on every line. */

describe('log lines of a started system', () => {
  it('the scan finds a key repeated at the top level, and only there', () => {
    expect(
      repeatedTopLevelKeys('{"domain":"fleet","n":{"domain":1},"s":"\\",\\"domain\\":","domain":"fleet"}'),
    ).toEqual(['domain']);
    expect(repeatedTopLevelKeys('{"a":[{"b":1},{"b":2}],"c":{"d":{"d":1}},"e":"{\\"e\\":1}"}')).toEqual([]);
  });

  it('carry each key once: start-up, requests to every domain, a consumer, shutdown', async () => {
    const { log, raw } = capturingServiceLogger('debug');
    // A new admin to seed: a line of the identity domain's own logger.
    const sys = await startTestSystem(
      {
        SVC_LOG_LEVEL: 'debug',
        SVC_ADMIN_EMAIL: `log-keys-${randomUUID().slice(0, 8)}@example.com`,
        SVC_ADMIN_PASSWORD: 'log keys admin passphrase',
      },
      { log },
    );
    const logged = async (what: string): Promise<void> => {
      for (let i = 0; i < 200 && !raw.some((l) => l.includes(what)); i++) await new Promise((r) => setTimeout(r, 50));
    };
    try {
      const admin = await createUser(sys, { superAdmin: true });
      const token = await tokenFor(sys, admin);
      for (const url of ['/api/v1/auth/me', '/api/v1/users', '/api/v1/clients', '/api/v1/hosts', '/api/v1/events'])
        await sys.http({ method: 'GET', url, token });
      await sys.invoicingHttp({ method: 'GET', url: '/api/v1/invoices', token });
      // A failed login is audited: the audit consumer's lines too.
      await sys.http({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: admin.email, password: 'not the password 0' },
      });
      // The status of a host nobody knows: the events domain's timeline consumer drops it, saying so.
      await publishEvent(sys.nc, 'svc.evt.fleet.agent_status', {
        host_id: randomUUID(),
        agent_id: randomUUID(),
        environment_id: randomUUID(),
        client_id: randomUUID(),
        hostname: 'nowhere',
        status: 'online',
        previous: 'offline',
        at: new Date().toISOString(),
      });
      await logged('"durable":"identity-audit-store');
      await logged('timeline event dropped');
    } finally {
      await sys.stop();
    }
    for (const domain of ['identity', 'fleet', 'invoice', 'servicedesk', 'events'])
      expect(raw.some((l) => l.includes(`"domain":"${domain}"`))).toBe(true);
    for (const what of ['seeded super admin', '"durable":"identity-audit-store', 'timeline event dropped'])
      expect(
        raw.some((l) => l.includes(what)),
        what,
      ).toBe(true);
    expect(raw.filter((l) => repeatedTopLevelKeys(l).length > 0)).toEqual([]);
  });
});
