import { z } from 'zod';
import { subjects } from '../subject.ts';

/**
 * Service-to-service lookups of the fleet's clients, environments and hosts, for domains that keep records about them
 * (the events domain: notes, alerts, markers, the timeline) without reading the fleet's tables. No REST route reaches
 * them: only a service's signed request does, so they answer ids and names to any caller and leave the
 * authorization to the asking domain, which checks the caller's grants on what comes back.
 */

export const HostRef = z.object({ id: z.uuid(), environment_id: z.uuid(), client_id: z.uuid(), hostname: z.string() });
export type HostRef = z.infer<typeof HostRef>;
export const EnvironmentRef = z.object({ id: z.uuid(), client_id: z.uuid(), name: z.string() });
export type EnvironmentRef = z.infer<typeof EnvironmentRef>;
export const ClientRef = z.object({ id: z.uuid(), name: z.string() });
export type ClientRef = z.infer<typeof ClientRef>;

const Ids = z.array(z.uuid()).max(200).default([]);

export const fleetLookupSubjects = subjects({
  'svc.fleet.lookup.resolve': {
    retry: 'safe',
    summary:
      'Clients, environments and hosts by id (what exists of them), with the environment and client each belongs to.',
    request: z.object({ client_ids: Ids, environment_ids: Ids, host_ids: Ids }),
    reply: z.object({ clients: z.array(ClientRef), environments: z.array(EnvironmentRef), hosts: z.array(HostRef) }),
    errors: [],
  },
  'svc.fleet.lookup.match_host': {
    retry: 'safe',
    summary:
      'The one host of a client (optionally of one environment) that a name designates: its hostname (case-insensitive, or its short name), or its IP address; null when none or several match.',
    request: z.object({
      client_id: z.uuid(),
      environment_id: z.uuid().nullable().default(null),
      names: z.array(z.string().min(1).max(255)).min(1).max(10),
    }),
    reply: z.object({ host: HostRef.nullable() }),
    errors: [],
  },
});
