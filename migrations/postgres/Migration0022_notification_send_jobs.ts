import { Migration } from '@mikro-orm/migrations';

/**
 * The send job a delivery is waiting for: a redelivery publishes a new one, and a job that is not the delivery's
 * current one (still waiting out a retry pause when the redelivery came) stops instead of sending alongside it.
 */
export class Migration0022_notification_send_jobs extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE notification_deliveries ADD COLUMN job_id uuid;`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE notification_deliveries DROP COLUMN job_id;`);
  }
}
