import { randomUUID } from 'node:crypto';
import { anonymousContext } from '../../contracts/context.ts';
import type { IdentityDeps } from './deps.ts';
import { SYSTEM_ROLES } from './permissions.ts';
import { toPgArray } from '../../platform/stores/pg-values.ts';

/**
 * Start-up seeding, safe to run from every instance at once: the eight system roles (kept equal to the code's
 * definition), and the super admin from SVC_ADMIN_EMAIL / SVC_ADMIN_PASSWORD when no user has that e-mail.
 */
export async function seedIdentity(deps: IdentityDeps): Promise<void> {
  const conn = deps.orm.em.fork().getConnection();
  for (const role of SYSTEM_ROLES) {
    await conn.execute(
      `INSERT INTO roles (id, name, description, permissions, is_system) VALUES (?, ?, ?, ?::text[], true)
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description, permissions = EXCLUDED.permissions, is_system = true, updated_at = now()
       WHERE roles.permissions IS DISTINCT FROM EXCLUDED.permissions OR roles.name IS DISTINCT FROM EXCLUDED.name`,
      [role.id, role.name, role.description, toPgArray(role.permissions)],
    );
  }
  const { SVC_ADMIN_EMAIL: email, SVC_ADMIN_PASSWORD: password } = deps.config;
  if (email && password) {
    const existing = await conn.execute<{ id: string }[]>(`SELECT id FROM users WHERE lower(email) = lower(?)`, [
      email,
    ]);
    if (existing.length > 0) {
      // Its password stays what it is: the one in SVC_ADMIN_PASSWORD may never have been it.
      deps.log.info(
        { email },
        'super admin already exists: SVC_ADMIN_PASSWORD not applied (npm run admin -- reset-password sets a new one)',
      );
    } else {
      const id = randomUUID();
      const hash = await deps.hasher.hash(password);
      const inserted = await conn.execute<{ id: string }[]>(
        `INSERT INTO users (id, email, display_name, status, is_super_admin, password_hash) VALUES (?, lower(?), ?, 'active', true, ?)
         ON CONFLICT DO NOTHING RETURNING id`,
        [id, email, 'Administrator', hash],
      );
      if (inserted.length > 0) {
        await conn.execute(`INSERT INTO password_history (id, user_id, password_hash) VALUES (?, ?, ?)`, [
          randomUUID(),
          id,
          hash,
        ]);
        deps.log.info({ email }, 'seeded super admin');
        await deps.audit.record(anonymousContext('seed'), {
          action: 'user.seeded',
          resource_type: 'user',
          resource_id: id,
          client_ids: [],
          details: { email, is_super_admin: true },
        });
      }
    }
  }
}
