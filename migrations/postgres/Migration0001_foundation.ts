import { Migration } from '@mikro-orm/migrations';

/**
 * Foundation: enables pgcrypto (digest/hmac/crypt for hashed secrets) where the server ships it. Creates nothing
 * domain-specific; each domain appends its own migrations to the list in ./index.ts.
 */
export class Migration0001_foundation extends Migration {
  override up(): void {
    // Guarded so a server without the contrib package (or a role that may not create extensions) still migrates.
    this.addSql(`
      DO $$
      BEGIN
        IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pgcrypto') THEN
          CREATE EXTENSION IF NOT EXISTS pgcrypto;
        END IF;
      EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'pgcrypto not enabled: insufficient privilege';
      END
      $$;
    `);
  }

  override down(): void {
    // Left in place: other schemas may depend on it, and dropping an extension is never worth a rollback.
  }
}
