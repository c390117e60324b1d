// The peer of the hop part: the same authenticated GET /api/v1/clients through Moleculer, the nearest design to this
// one (an HTTP gateway, moleculer-web, calling a service over Moleculer's NATS transporter), on the same broker over
// TLS. The gateway does what the comparison paths do before their call (bench/clients-list.ts); the `clients.list`
// action runs the fleet actor's own list handler. Moleculer's own defaults otherwise: its JSON serializer, its
// balancer. In one process the gateway and the service are two brokers, each with its own NATS connection, so the
// call crosses NATS as the system's single process does (one broker would call its own service in memory).
//   BENCH_MOLECULER_ROLE=all      gateway and service in this process (the default)
//   BENCH_MOLECULER_ROLE=gateway  the gateway only: every call crosses the transporter to a `service` process
//   BENCH_MOLECULER_ROLE=service  the service only
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { ServiceBroker, type Context } from 'moleculer';
import ApiGateway from 'moleculer-web';
import { credsAuthenticator } from 'nats';
import { authenticate, closeClientsList, config, listClients, type Ctx } from './clients-list.ts';

const role = process.env.BENCH_MOLECULER_ROLE ?? 'all';
if (!['all', 'gateway', 'service'].includes(role))
  throw new Error(`BENCH_MOLECULER_ROLE ${role}: all, gateway or service`);
// The maintenance user: Moleculer speaks on its own MOL.> subjects, which the service credentials do not name.
const creds = process.env.SVC_NATS_ADMIN_CREDS ?? 'data/nats/admin.creds';

function newBroker(part: string): ServiceBroker {
  return new ServiceBroker({
    nodeID: `bench-moleculer-${part}-${process.pid}`,
    // Its own namespace, so a split pair never answers a one-process run's calls.
    namespace: `${config.SVC_NAMESPACE}-${process.env.BENCH_MOLECULER_NAMESPACE ?? 'one'}`,
    logger: false,
    transporter: {
      type: 'NATS',
      options: {
        servers: config.SVC_NATS_URL.split(','),
        ...(config.SVC_NATS_CA ? { tls: { caFile: config.SVC_NATS_CA } } : {}),
        authenticator: credsAuthenticator(new Uint8Array(readFileSync(creds))),
      },
    },
  });
}
const brokers: ServiceBroker[] = [];

interface Meta {
  user?: Ctx;
}

if (role !== 'gateway') {
  const broker = newBroker('service');
  brokers.push(broker);
  broker.createService({
    name: 'clients',
    actions: {
      list: {
        handler: (ctx: Context<unknown, Meta>) => listClients(ctx.meta.user!),
      },
    },
  });
}

if (role !== 'service') {
  const broker = newBroker('gateway');
  brokers.push(broker);
  broker.createService({
    name: 'api',
    mixins: [ApiGateway],
    settings: {
      port: Number(process.env.BENCH_MOLECULER_PORT ?? 18095),
      ip: '127.0.0.1',
      routes: [{ path: '/api/v1', authentication: true, aliases: { 'GET clients': 'clients.list' } }],
    },
    methods: {
      async authenticate(_ctx: Context<unknown, Meta>, _route: unknown, req: IncomingMessage): Promise<Ctx> {
        const user = await authenticate(req.socket.remoteAddress ?? '', req.headers.authorization);
        if (!user) throw new ApiGateway.Errors.UnAuthorizedError(ApiGateway.Errors.ERR_NO_TOKEN, null);
        return user;
      },
    },
  });
}

for (const b of brokers) await b.start();
if (role !== 'service') await brokers[brokers.length - 1]!.waitForServices(['clients'], 60_000);

process.on('SIGTERM', () => {
  void Promise.all(brokers.map((b) => b.stop()))
    .then(() => closeClientsList())
    .then(() => process.exit(0));
});
