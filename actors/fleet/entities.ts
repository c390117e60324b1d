import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** Clients: the tenants every grant and host hangs on. Owned by the fleet domain. */
export const ClientEntity = defineEntity({
  name: 'Client',
  tableName: 'clients',
  properties: {
    id: p.uuid().primary(),
    name: p.string(),
    slug: p.string(),
    created_at: p.datetime().onCreate(() => new Date()),
    updated_at: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Client = InferEntity<typeof ClientEntity>;

export const fleetEntities = [ClientEntity];
