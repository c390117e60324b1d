import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy a test can break on purpose, to play a network that fails the way real ones do:
 * - `cut()`: every connection is closed and new ones are refused (the broker is away);
 * - `blackhole()`: connections stay up and the client's bytes still reach the server, but nothing comes back
 *   (the server stores a publish, the acknowledgement is lost);
 * - `delayUpstream(ms)`: the client's bytes reach the server `ms` later, in order (a slow or busy link);
 * - `open()`: back to normal.
 */
export class TcpProxy {
  private mode: 'open' | 'cut' | 'blackhole' = 'open';
  private upstreamDelayMs = 0;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();

  private readonly server: Server;
  readonly port: number;
  private constructor(server: Server, port: number) {
    this.server = server;
    this.port = port;
  }

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new TcpProxy(server, (server.address() as AddressInfo).port);
    server.on('connection', (client) => proxy.accept(client, targetHost, targetPort));
    return proxy;
  }

  /** A proxy in front of the first server of a NATS URL list (`nats://host:port,...`). */
  static forNats(natsUrl: string): Promise<TcpProxy> {
    const target = new URL(natsUrl.split(',')[0]!.replace(/^nats:/, 'http:'));
    return TcpProxy.start(target.hostname, Number(target.port || 4222));
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get connections(): number {
    return this.pairs.size;
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.mode === 'cut') {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const end = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (d) => {
      // Equal delays keep the chunks in order (timers of equal timeout fire in the order they were set).
      if (this.upstreamDelayMs > 0) setTimeout(() => upstream.write(d), this.upstreamDelayMs);
      else upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (this.mode === 'open') client.write(d);
    });
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  }

  cut(): void {
    this.mode = 'cut';
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  blackhole(): void {
    this.mode = 'blackhole';
  }

  delayUpstream(ms: number): void {
    this.upstreamDelayMs = ms;
  }

  open(): void {
    this.mode = 'open';
    this.upstreamDelayMs = 0;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
