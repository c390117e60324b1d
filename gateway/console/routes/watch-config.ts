import { z } from 'zod';
import { PutWatchConfigHttpBody } from '../../../contracts/domains/fleet-agents.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const HostParams = z.object({ hostID: z.uuid() });

/** Watch config (docs/api/fleet.md): a PUT also sends a config_update command to the host's agent. */
export function registerWatchConfigRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['hosts'] });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:hostID/watch-config',
    subject: 'svc.fleet.watch_config.get',
    params: HostParams,
    input: ({ params }) => ({ host_id: params.hostID }),
  });
  route({
    method: 'PUT',
    url: '/api/v1/hosts/:hostID/watch-config',
    subject: 'svc.fleet.watch_config.put',
    params: HostParams,
    body: PutWatchConfigHttpBody,
    input: ({ params, body: { config_data, host_id, config_type, ...flat } }) => ({
      // paths is there when config_data is not (the body's refinement); `[]` only satisfies the type, the subject refuses it.
      ...(config_data ?? { ...flat, paths: flat.paths ?? [] }),
      host_id: params.hostID,
      sent: { ...(host_id !== undefined ? { host_id } : {}), ...(config_type !== undefined ? { config_type } : {}) },
    }),
  });
}
