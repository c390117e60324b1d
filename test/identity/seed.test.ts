import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SYSTEM_ROLES } from '../../actors/identity/permissions.ts';
import { waitForAuditRow } from '../support/identity.ts';
import { capturingLogger } from '../support/log-capture.ts';
import { errorOf, startTestSystem } from '../support/system.ts';

/** Super admin seeded from SVC_ADMIN_EMAIL / SVC_ADMIN_PASSWORD; eight immutable system roles (docs/api/identity.md). */

const PASSWORD = 'seeded admin passphrase 1';

describe('start-up seeding', () => {
  it('seeds the super admin once (an existing e-mail is left alone) and the eight system roles', async () => {
    const email = `seed-${randomUUID().slice(0, 8)}@example.com`;
    const first = await startTestSystem({ SVC_ADMIN_EMAIL: email, SVC_ADMIN_PASSWORD: PASSWORD });
    let id: string;
    try {
      const login = await first.http({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email, password: PASSWORD },
      });
      expect(login.statusCode, login.body).toBe(200);
      const token = (login.json() as { data: { access_token: string } }).data.access_token;
      const me = await first.http({ method: 'GET', url: '/api/v1/auth/me', token });
      const user = (
        me.json() as { data: { user: { id: string; status: string; is_super_admin: boolean; mfa_enabled: boolean } } }
      ).data.user;
      expect(user).toMatchObject({ status: 'active', is_super_admin: true, mfa_enabled: false });
      id = user.id;
      // A super admin too must enrol MFA before anything else.
      const gated = await first.http({ method: 'GET', url: '/api/v1/users', token });
      expect(gated.statusCode).toBe(403);
      expect(errorOf(gated).code).toBe('mfa_enrollment_required');
      await waitForAuditRow(first, id, 'user.seeded');

      const roles = await first.sql<{ id: string; name: string; permissions: string[]; is_system: boolean }>(
        `SELECT id, name, permissions, is_system FROM roles WHERE is_system ORDER BY id`,
      );
      expect(roles.map((r) => r.name)).toEqual([
        'Super Admin',
        'Admin',
        'Team Lead',
        'Engineer',
        'Executive',
        'Viewer',
        'Client',
        'Client Engineer',
      ]);
      for (const role of roles)
        expect([...role.permissions].sort(), role.name).toEqual(
          [...SYSTEM_ROLES.find((r) => r.id === role.id)!.permissions].sort(),
        );
    } finally {
      await first.stop();
    }

    // Started again with another password for the same e-mail: nothing changes, and the log says the account exists
    // rather than that it was seeded.
    const { log, lines } = capturingLogger('info');
    const second = await startTestSystem(
      { SVC_ADMIN_EMAIL: email.toUpperCase(), SVC_ADMIN_PASSWORD: 'another admin passphrase 2' },
      { log },
    );
    try {
      expect(lines.map((l) => l.msg)).toContain(
        'super admin already exists: SVC_ADMIN_PASSWORD not applied (npm run admin -- reset-password sets a new one)',
      );
      expect(lines.map((l) => l.msg)).not.toContain('seeded super admin');
      expect(await second.sql(`SELECT id FROM users WHERE lower(email) = ?`, [email])).toEqual([{ id }]);
      const old = await second.http({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email, password: PASSWORD },
      });
      expect(old.statusCode).toBe(200);
    } finally {
      await second.stop();
    }
  });
});
