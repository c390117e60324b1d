import cors from '@fastify/cors';
import { appPlugin } from './define.ts';

/** CORS for the origins of SVC_CORS_ORIGINS. */
export const corsPolicy = appPlugin<{ origins: string[] }>('gateway-cors', async (app, { origins }) => {
  const anyOrigin = origins.includes('*');
  await app.register(cors, {
    // `*` answers a literal `*` and never allows credentials: reflecting any origin with credentials would let every
    // site make credentialed requests. A list of origins is echoed back, with credentials.
    origin: anyOrigin ? '*' : origins.length > 0 ? origins : false,
    credentials: !anyOrigin,
    exposedHeaders: ['x-request-id', 'retry-after', 'content-disposition', 'idempotent-replayed'],
  });
});
