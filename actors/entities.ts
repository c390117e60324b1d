import { fleetEntities } from './fleet/entities.ts';
import { identityEntities } from './identity/entities.ts';

/** Every entity of every domain: one ORM per process knows them all (tables still have one owning domain). */
export const allEntities = [...identityEntities, ...fleetEntities];
