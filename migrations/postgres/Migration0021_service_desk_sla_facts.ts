import { Migration } from '@mikro-orm/migrations';

/**
 * What the sync compares a request's SLAs with before it tells of a change (svc.evt.servicedesk.sla): each metric's
 * cycle state and breach time, which the stored cycles (`sla`) do not hold. NULL on the rows stored before: their first
 * comparison reads the state from `sla` alone.
 */
export class Migration0021_service_desk_sla_facts extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE sd_requests ADD COLUMN sla_facts jsonb;`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE sd_requests DROP COLUMN sla_facts;`);
  }
}
