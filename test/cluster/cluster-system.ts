import { setBrokerReplicas } from '../../platform/replicas.ts';
import { startAdminSystem } from '../identity/admin-support.ts';
import { NatsCluster } from '../support/nats-cluster.ts';
import type { TestSystem } from '../support/system.ts';

/**
 * Three real TLS nodes and the system on them at three replicas (identity and fleet, the console gateway), with a
 * signed-in super admin. The caller closes the cluster and puts the replica setting back.
 */
export async function startClusterSystem(
  overrides: Record<string, string> = {},
  opts: Parameters<typeof startAdminSystem>[1] = {},
): Promise<{ cluster: NatsCluster; sys: TestSystem; root: string }> {
  const cluster = await NatsCluster.start(3);
  setBrokerReplicas(3);
  const { sys, root } = await startAdminSystem(
    {
      SVC_NATS_URL: cluster.urls,
      SVC_AGENT_NATS_SERVERS: cluster.urls,
      SVC_NATS_REPLICAS: '3',
      ...overrides,
    },
    opts,
  );
  return { cluster, sys, root };
}
