import { Socket } from 'node:net';

/**
 * Loaded before every file of the unit tier (test/vitest.unit.config.ts): a unit test reaches no server, so any
 * connection it opens (a client made at import time, an HTTP call, a store opened by accident; TCP or a Unix socket)
 * fails at once, naming where it was going, instead of passing where the services happen to run and failing where they
 * do not. Fastify's inject opens no socket.
 */
Socket.prototype.connect = function refuse(...args: unknown[]): Socket {
  // net.connect hands its arguments on normalized: [[options, callback]].
  const [first] = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  const target =
    typeof first === 'object' && first !== null
      ? JSON.stringify(first, ['host', 'port', 'path'])
      : args.filter((a) => typeof a !== 'function').join(':');
  throw new Error(`a unit test opened a connection (${target}): it belongs in the integration tier`);
} as typeof Socket.prototype.connect;
