import type { DomainModule } from '../platform/domain.ts';
import { eventsDomain } from './events/index.ts';
import { fleetDomain } from './fleet/index.ts';
import { identityDomain } from './identity/index.ts';
import { invoiceDomain } from './invoice/index.ts';
import { servicedeskDomain } from './servicedesk/index.ts';

/** Every domain a process can run; SVC_ACTORS picks a subset (`all` by default, `none` for a gateway-only process). */
export const domains: readonly DomainModule[] = [
  identityDomain,
  fleetDomain,
  invoiceDomain,
  servicedeskDomain,
  eventsDomain,
];

export function selectDomains(names: readonly string[]): DomainModule[] {
  if (names.includes('none')) return [];
  if (names.includes('all')) return [...domains];
  const unknown = names.filter((n) => !domains.some((d) => d.name === n));
  if (unknown.length > 0)
    throw new Error(
      `SVC_ACTORS: unknown domain(s) ${unknown.join(', ')}; known: ${domains.map((d) => d.name).join(', ')}`,
    );
  return domains.filter((d) => names.includes(d.name));
}

/** The ORM entities of every domain: one ORM per process knows them all (each table still has one owning domain). */
export const allEntities = domains.flatMap((d) => d.entities ?? []);
