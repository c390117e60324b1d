import type { MigrationObject } from '@mikro-orm/core';
import { Migration0001_foundation } from './Migration0001_foundation.ts';
import { Migration0002_identity } from './Migration0002_identity.ts';
import { Migration0003_invoicing } from './Migration0003_invoicing.ts';
import { Migration0004_invoice_pdfs } from './Migration0004_invoice_pdfs.ts';
import { Migration0005_invoice_accounting_sync } from './Migration0005_invoice_accounting_sync.ts';
import { Migration0006_fleet } from './Migration0006_fleet.ts';
import { Migration0008_fleet_inventory } from './Migration0008_fleet_inventory.ts';
import { Migration0009_saved_searches } from './Migration0009_saved_searches.ts';
import { Migration0010_events } from './Migration0010_events.ts';
import { Migration0011_service_desk } from './Migration0011_service_desk.ts';
import { Migration0012_service_desk_reads } from './Migration0012_service_desk_reads.ts';
import { Migration0013_package_statistics } from './Migration0013_package_statistics.ts';
import { Migration0014_service_desk_search } from './Migration0014_service_desk_search.ts';
import { Migration0015_host_heartbeat_hot } from './Migration0015_host_heartbeat_hot.ts';
import { Migration0016_audit_log_clients } from './Migration0016_audit_log_clients.ts';
import { Migration0017_notifications } from './Migration0017_notifications.ts';
import { Migration0018_notification_voice } from './Migration0018_notification_voice.ts';
import { Migration0019_notification_voice_tests } from './Migration0019_notification_voice_tests.ts';
import { Migration0020_notification_rule_events } from './Migration0020_notification_rule_events.ts';
import { Migration0021_service_desk_sla_facts } from './Migration0021_service_desk_sla_facts.ts';
import { Migration0022_notification_send_jobs } from './Migration0022_notification_send_jobs.ts';

/**
 * Every PostgreSQL migration, in the order they apply. Append only; never rename or reorder (the `name` is what the
 * `mikro_orm_migrations` table records). Explicit imports instead of a glob: works unchanged under type stripping and bundlers.
 */
export const postgresMigrations: readonly MigrationObject[] = [
  { name: 'Migration0001_foundation', class: Migration0001_foundation },
  { name: 'Migration0002_identity', class: Migration0002_identity },
  { name: 'Migration0003_invoicing', class: Migration0003_invoicing },
  { name: 'Migration0004_invoice_pdfs', class: Migration0004_invoice_pdfs },
  { name: 'Migration0005_invoice_accounting_sync', class: Migration0005_invoice_accounting_sync },
  { name: 'Migration0006_fleet', class: Migration0006_fleet },
  { name: 'Migration0008_fleet_inventory', class: Migration0008_fleet_inventory },
  { name: 'Migration0009_saved_searches', class: Migration0009_saved_searches },
  { name: 'Migration0010_events', class: Migration0010_events },
  { name: 'Migration0011_service_desk', class: Migration0011_service_desk },
  { name: 'Migration0012_service_desk_reads', class: Migration0012_service_desk_reads },
  { name: 'Migration0013_package_statistics', class: Migration0013_package_statistics },
  { name: 'Migration0014_service_desk_search', class: Migration0014_service_desk_search },
  { name: 'Migration0015_host_heartbeat_hot', class: Migration0015_host_heartbeat_hot },
  { name: 'Migration0016_audit_log_clients', class: Migration0016_audit_log_clients },
  { name: 'Migration0017_notifications', class: Migration0017_notifications },
  { name: 'Migration0018_notification_voice', class: Migration0018_notification_voice },
  { name: 'Migration0019_notification_voice_tests', class: Migration0019_notification_voice_tests },
  { name: 'Migration0020_notification_rule_events', class: Migration0020_notification_rule_events },
  { name: 'Migration0021_service_desk_sla_facts', class: Migration0021_service_desk_sla_facts },
  { name: 'Migration0022_notification_send_jobs', class: Migration0022_notification_send_jobs },
];
