import { connect, type Socket } from 'node:net';

/**
 * Raw HTTP/1.1 over a socket, for what `inject` cannot show: Node's HTTP parser (431, unknown methods, malformed
 * request lines) runs only on a real connection, and so do keep-alive and shutdown races.
 */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses every complete response in `data` (several on a kept-alive connection); ignores a trailing partial one. */
export function parseResponses(data: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = data;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const lines = rest.slice(0, end).split('\r\n');
    const status = Number(lines[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    let body = '';
    let after = rest.slice(end + 4);
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const nl = after.indexOf('\r\n');
        const size = parseInt(after.slice(0, nl), 16);
        after = after.slice(nl + 2);
        if (size === 0) {
          after = after.slice(2);
          break;
        }
        body += after.slice(0, size);
        after = after.slice(size + 2);
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      body = after.slice(0, length);
      after = after.slice(length);
    }
    out.push({ status, headers, body });
    rest = after;
  }
  return out;
}

/** Sends `request` as written on a new connection and collects what comes back until the server closes it. */
export async function rawRequest(
  port: number,
  request: string | Buffer,
  waitMs = 3000,
): Promise<{ responses: RawResponse[]; raw: string; error?: string }> {
  const socket = connect(port, '127.0.0.1');
  return collect(socket, waitMs, () => socket.write(request));
}

export function collect(
  socket: Socket,
  waitMs: number,
  start: () => void,
): Promise<{ responses: RawResponse[]; raw: string; error?: string }> {
  return new Promise((resolve) => {
    let raw = '';
    let error: string | undefined;
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ responses: parseResponses(raw), raw, ...(error ? { error } : {}) });
    });
    if (socket.connecting) socket.once('connect', start);
    else start();
  });
}
