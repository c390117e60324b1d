import { Migration } from '@mikro-orm/migrations';

/**
 * Voice as a notification channel: a channel of kind `voice` calls its phone number, and its calls are recorded in
 * `voice_calls` like a page's, of a notification instead of an alert group (digit 1 acknowledges the notification),
 * one call per delivery (the call's id is the delivery's).
 */
export class Migration0018_notification_voice extends Migration {
  override up(): void {
    this.addSql(`
      ALTER TABLE notification_channels ADD COLUMN phone text;
      ALTER TABLE notification_channels DROP CONSTRAINT IF EXISTS notification_channels_kind_check;
      ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_kind_check
        CHECK (kind IN ('email', 'chat', 'webhook', 'voice'));
      ALTER TABLE notification_channels DROP CONSTRAINT IF EXISTS notification_channels_check;
      ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_url_check
        CHECK ((kind IN ('chat', 'webhook')) = (url IS NOT NULL));
      ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_phone_check
        CHECK ((kind = 'voice') = (phone IS NOT NULL));

      ALTER TABLE voice_calls ALTER COLUMN alert_group_id DROP NOT NULL;
      ALTER TABLE voice_calls ADD COLUMN notification_id uuid REFERENCES notifications (id) ON DELETE CASCADE;
      ALTER TABLE voice_calls ADD CONSTRAINT voice_calls_subject CHECK ((alert_group_id IS NULL) <> (notification_id IS NULL));
      CREATE INDEX voice_calls_notification ON voice_calls (notification_id) WHERE notification_id IS NOT NULL;
    `);
  }

  override down(): void {
    this.addSql(`
      DELETE FROM voice_calls WHERE alert_group_id IS NULL;
      DROP INDEX IF EXISTS voice_calls_notification;
      ALTER TABLE voice_calls DROP CONSTRAINT voice_calls_subject;
      ALTER TABLE voice_calls DROP COLUMN notification_id;
      ALTER TABLE voice_calls ALTER COLUMN alert_group_id SET NOT NULL;
      DELETE FROM notification_channels WHERE kind = 'voice';
      ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_phone_check;
      ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_url_check;
      ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_check CHECK ((kind = 'email') = (url IS NULL));
      ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_kind_check;
      ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_kind_check
        CHECK (kind IN ('email', 'chat', 'webhook'));
      ALTER TABLE notification_channels DROP COLUMN phone;
    `);
  }
}
