import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { parseResponses } from './raw-http.ts';

/**
 * Closing a gateway (SIGTERM) must not reset a kept-alive connection whose next request is already on its way: that
 * request is answered 503 in the envelope with `Connection: close`. Over a real socket, since the race is in Node's
 * connection handling.
 */
const log = createLogger('silent');

async function build(drainMs?: number): Promise<{ app: GatewayApp; port: number }> {
  const app = await createGatewayApp(
    {
      style: 'console',
      title: 't',
      version: '1',
      config: { SVC_CORS_ORIGINS: [], SVC_ENABLE_DEBUG_ENDPOINTS: false },
      log,
      ...(drainMs !== undefined ? { drainMs } : {}),
    },
    (a) => {
      a.get('/api/v1/ping', async () => ({ data: { pong: true } }));
      a.get('/api/v1/slow', async () => {
        await new Promise((r) => setTimeout(r, 400));
        return { data: { slow: true } };
      });
    },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as AddressInfo).port };
}

const ping = (id: string): string =>
  `GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nX-Request-Id: ${id}\r\n\r\n`;

/** A kept-alive connection that has finished one request and is idle. */
async function idleConnection(
  port: number,
): Promise<{ socket: Socket; data: () => string; error: () => string | undefined; closed: Promise<unknown> }> {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  let error: string | undefined;
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
  const closed = once(socket, 'close');
  await once(socket, 'connect');
  socket.write(ping('first'));
  const t0 = Date.now();
  while (parseResponses(received).length < 1 && Date.now() - t0 < 2000) await new Promise((r) => setTimeout(r, 5));
  expect(parseResponses(received)[0]?.status).toBe(200);
  return { socket, data: () => received, error: () => error, closed };
}

describe('gateway shutdown with kept-alive connections', () => {
  it('answers a request sent just before close with the 503 envelope and Connection: close, never a reset', async () => {
    // The race depends on when the bytes are read relative to close: try it a few times.
    for (let round = 0; round < 5; round++) {
      const { app, port } = await build();
      const conn = await idleConnection(port);
      conn.socket.write(ping(`late-${round}`));
      await app.close();
      await conn.closed;
      expect(conn.error(), `round ${round}`).toBeUndefined();
      const responses = parseResponses(conn.data());
      expect(
        responses.map((r) => r.status),
        `round ${round}`,
      ).toEqual([200, 503]);
      const late = responses[1]!;
      expect(late.headers.connection).toBe('close');
      expect(JSON.parse(late.body)).toEqual({
        error: {
          code: 'service_unavailable',
          message: expect.stringMatching(/shutting down/),
          request_id: `late-${round}`,
        },
      });
    }
  });

  it('answers a request arriving during the drain on an idle connection, then closes it', async () => {
    const { app, port } = await build();
    const conn = await idleConnection(port);
    const closed = app.close();
    await new Promise((r) => setTimeout(r, 50));
    conn.socket.write(ping('during'));
    await closed;
    await conn.closed;
    expect(conn.error()).toBeUndefined();
    const responses = parseResponses(conn.data());
    expect(responses.map((r) => r.status)).toEqual([200, 503]);
    expect(responses[1]!.headers.connection).toBe('close');
  });

  it('does not hold close past the drain window for a connection that stays idle', async () => {
    const { app, port } = await build(300);
    const conn = await idleConnection(port);
    const t0 = Date.now();
    await app.close();
    await conn.closed;
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(1500);
    expect(conn.error()).toBeUndefined();
  });

  it('finishes a request in flight and does not hold close for the keep-alive timeout', async () => {
    const { app, port } = await build(200);
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const closedSocket = once(socket, 'close');
    await once(socket, 'connect');
    socket.write('GET /api/v1/slow HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await app.close();
    await closedSocket;
    // Kept alive, the connection would hold close() for the keep-alive timeout (72 s) before being cut.
    expect(Date.now() - t0).toBeLessThan(2000);
    const [res] = parseResponses(received);
    expect(res?.status).toBe(200);
    expect(JSON.parse(res!.body)).toEqual({ data: { slow: true } });
  });

  it('closes at once when no connection is open', async () => {
    const { app } = await build(5000);
    const t0 = Date.now();
    await app.close();
    expect(Date.now() - t0).toBeLessThan(500);
  });
});
