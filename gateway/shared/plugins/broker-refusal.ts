import type { BrokerBreaker } from '../broker-breaker.ts';
import { sendError, type ServiceStyle } from '../errors.ts';
import { appPlugin } from './define.ts';

export interface BrokerRefusalOptions {
  style: ServiceStyle;
  breaker: Pick<BrokerBreaker, 'refusal'>;
}

/**
 * New `/api/` requests are refused at once while the message broker is not answering. Registered after CORS, so a
 * preflight is still answered and the 503 carries the CORS headers a browser needs to read it. Probes, metrics and
 * the explorer never need the broker and stay outside /api/.
 */
export const brokerRefusal = appPlugin<BrokerRefusalOptions>('gateway-broker-refusal', async (app, opts) => {
  const { style, breaker } = opts;
  app.addHook('onRequest', (req, reply, done) => {
    const refused = req.url.startsWith('/api/') ? breaker.refusal() : undefined;
    if (refused) sendError(style, req, reply, refused);
    else done();
  });
});
