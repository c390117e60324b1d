import { Migration } from '@mikro-orm/migrations';

/**
 * A voice channel's test call is of no notification: a call names at most one of an alert group and a notification,
 * and a voice channel's calls name their delivery (what a test call reads out).
 */
export class Migration0019_notification_voice_tests extends Migration {
  override up(): void {
    this.addSql(`
      ALTER TABLE voice_calls DROP CONSTRAINT IF EXISTS voice_calls_subject;
      ALTER TABLE voice_calls ADD COLUMN delivery_id uuid REFERENCES notification_deliveries (id) ON DELETE CASCADE;
      -- A notification's call so far had its delivery's id.
      UPDATE voice_calls c SET delivery_id = c.id
       WHERE c.notification_id IS NOT NULL AND EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.id = c.id);
      DELETE FROM voice_calls WHERE alert_group_id IS NULL AND delivery_id IS NULL;
      ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_subject
        CHECK (alert_group_id IS NULL OR (notification_id IS NULL AND delivery_id IS NULL));
      ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_of_something CHECK (alert_group_id IS NOT NULL OR delivery_id IS NOT NULL);
    `);
  }

  override down(): void {
    this.addSql(`
      DELETE FROM voice_calls WHERE alert_group_id IS NULL AND notification_id IS NULL;
      ALTER TABLE voice_calls DROP CONSTRAINT voice_calls_of_something;
      ALTER TABLE voice_calls DROP CONSTRAINT voice_calls_subject;
      ALTER TABLE voice_calls DROP COLUMN delivery_id;
      ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_subject CHECK ((alert_group_id IS NULL) <> (notification_id IS NULL));
    `);
  }
}
