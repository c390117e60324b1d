import { accessSubjects } from './domains/access.ts';
import { eventsSubjects } from './domains/events.ts';
import { eventsChartSubjects } from './domains/events-charts.ts';
import { notificationSubjects } from './domains/events-notifications.ts';
import { fleetSubjects } from './domains/fleet.ts';
import { fleetAgentSubjects } from './domains/fleet-agents.ts';
import { fleetInventorySubjects } from './domains/fleet-inventory.ts';
import { fleetMetricsSubjects } from './domains/fleet-metrics.ts';
import { fleetSearchSubjects } from './domains/fleet-search.ts';
import { fleetLookupSubjects } from './domains/fleet-lookup.ts';
import { identityAdminSubjects } from './domains/identity-admin.ts';
import { identityAuthSubjects } from './domains/identity-auth.ts';
import { identityLookupSubjects } from './domains/identity-lookup.ts';
import { identitySsoSubjects } from './domains/identity-sso.ts';
import { invoiceSubjects } from './domains/invoice.ts';
import { invoiceAccountingSubjects } from './domains/invoice-accounting.ts';
import { invoiceDocumentSubjects } from './domains/invoice-documents.ts';
import { servicedeskSubjects } from './domains/servicedesk.ts';
import { servicedeskProxySubjects } from './domains/servicedesk-proxy.ts';

/**
 * The one map of the system: every request-reply subject, its request and reply schemas and its errors.
 * Gateways validate with these schemas, actors serve them, and the OpenAPI document is generated from them.
 */
export const catalogue = {
  ...accessSubjects,
  ...identityAuthSubjects,
  ...identitySsoSubjects,
  ...identityAdminSubjects,
  ...identityLookupSubjects,
  ...fleetSubjects,
  ...fleetAgentSubjects,
  ...fleetInventorySubjects,
  ...fleetMetricsSubjects,
  ...fleetSearchSubjects,
  ...fleetLookupSubjects,
  ...invoiceSubjects,
  ...invoiceDocumentSubjects,
  ...invoiceAccountingSubjects,
  ...servicedeskSubjects,
  ...servicedeskProxySubjects,
  ...eventsSubjects,
  ...eventsChartSubjects,
  ...notificationSubjects,
} as const;

export type SystemCatalogue = typeof catalogue;
