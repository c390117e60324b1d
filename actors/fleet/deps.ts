import type { MikroORM } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import type { AuditRecorder } from '../../platform/audit.ts';
import type { Handlers } from '../../platform/serve.ts';
import type { AgentRevoker } from './agents/revocation.ts';
import type { HostScopes } from './metrics/host-scopes.ts';

/** What the fleet's request actors share. Built once per process by actors/fleet/index.ts. */
export interface FleetDeps {
  orm: MikroORM;
  audit: AuditRecorder;
  revoker: AgentRevoker;
  /** The metric routes' hosts (metrics/host-scopes.ts): deleting a host or a client forgets them (an environment with hosts cannot be deleted). */
  hostScopes?: HostScopes;
}

export type FleetHandlers = Handlers<SystemCatalogue, 'fleet'>;
