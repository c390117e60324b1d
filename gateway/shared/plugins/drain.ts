import type { Duplex } from 'node:stream';
import { DomainError } from '../../../contracts/errors.ts';
import { sendError, type ServiceStyle } from '../errors.ts';
import { appPlugin } from './define.ts';

export interface DrainOptions {
  style: ServiceStyle;
  /** How long connections still open at close are given before they are cut. */
  drainMs: number;
}

/**
 * A clean close: requests in flight finish, new ones are told to go elsewhere (503), and kept-alive connections get a
 * short window to be used or go quiet before they are cut.
 */
export const drainOnClose = appPlugin<DrainOptions>('gateway-drain', async (app, { style, drainMs }) => {
  // Open connections, so a close can wait for kept-alive ones to be used or go quiet before they are cut.
  const connections = new Set<Duplex>();
  app.server.on('connection', (socket: Duplex) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // A request in flight finishes and leaves its connection kept alive (a request already pipelined behind it still
    // gets its 503): that connection must not hold close() for the usual keep-alive timeout (72 s).
    app.server.keepAliveTimeout = drainMs;
    // Node's server.close() (run by Fastify right after this hook) destroys every connection that is idle between
    // requests at once, including one whose next request has already arrived but is not yet read: the client sees a
    // reset and never learns whether its request ran. Instead, give open connections a short window: a request that
    // arrives meanwhile is answered 503 with `Connection: close` (the hook below), which ends its connection cleanly;
    // only connections still silent after the window are cut.
    const until = Date.now() + drainMs;
    while (app.server.listening && connections.size > 0 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 10));
  });
  // Callback-style hooks here and in the other per-request plugins: an async hook costs a promise and a microtask on
  // every request. A hook that answers sends and does not call `done`.
  app.addHook('onRequest', (req, reply, done) => {
    // In-flight requests finish; new ones are told to go elsewhere.
    if (closing) sendError(style, req, reply, new DomainError('unavailable', 'the server is shutting down; retry'));
    else done();
  });
});
