import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Tsdb, TsdbError, type PromMatrix, type PromVector } from '../../actors/fleet/metrics/tsdb.ts';
import { testConfig } from '../support/env.ts';

const tsdb = new Tsdb(testConfig().SVC_TSDB_URL);
// A metric name of its own per run: VictoriaMetrics caches query results, and other runs' data must not interfere.
const metric = `svc_store_probe_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
// An hour back, on a minute boundary: VictoriaMetrics hides the newest ~30 s from queries, and aligns range steps.
const t0 = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
const ts = [t0, t0 + 60_000, t0 + 120_000];
const range = { start: t0 / 1000, end: (t0 + 120_000) / 1000 };

beforeAll(async () => {
  await tsdb.ping();
  await tsdb.importSeries([
    { metric: { __name__: metric, client_id: 'a', host: 'h1' }, values: [1, 2, 3], timestamps: ts },
    { metric: { __name__: metric, client_id: 'b', host: 'h2' }, values: [10, 20, 30.5], timestamps: ts },
  ]);
  await tsdb.flush();
});

afterAll(async () => {
  await tsdb.deleteSeries([`{__name__="${metric}"}`]);
});

const byClient = (r: { metric: Record<string, string> }[]) =>
  [...r].sort((x, y) => (x.metric.client_id ?? '').localeCompare(y.metric.client_id ?? ''));

describe('Tsdb (VictoriaMetrics)', () => {
  it('returns imported points from query_range once flushed', async () => {
    const res = await tsdb.queryRange({ query: metric, ...range, step: 60 });
    expect(res.status).toBe('success');
    const data = res.data as PromMatrix;
    expect(data.resultType).toBe('matrix');
    expect(byClient(data.result)).toEqual([
      { metric: { __name__: metric, client_id: 'a', host: 'h1' }, values: ts.map((t, i) => [t / 1000, String(i + 1)]) },
      {
        metric: { __name__: metric, client_id: 'b', host: 'h2' },
        values: ts.map((t, i) => [t / 1000, ['10', '20', '30.5'][i]]),
      },
    ]);
  });

  it('restricts every selector of a query to extra_filters (tenant isolation)', async () => {
    // Even an aggregation over "everything" only sees client a's series.
    const res = await tsdb.queryRange({
      query: `sum(${metric})`,
      ...range,
      step: 60,
      extraFilters: ['{client_id="a"}'],
    });
    const data = res.data as PromMatrix;
    expect(data.result).toHaveLength(1);
    expect(data.result[0]?.values.map((v) => v[1])).toEqual(['1', '2', '3']);

    const none = await tsdb.queryRange({ query: metric, ...range, step: 60, extraFilters: ['{client_id="nobody"}'] });
    expect((none.data as PromMatrix).result).toEqual([]);
  });

  it('answers instant queries', async () => {
    const res = await tsdb.query({ query: metric, time: (t0 + 60_000) / 1000, extraFilters: ['{client_id="b"}'] });
    const data = res.data as PromVector;
    expect(data.resultType).toBe('vector');
    expect(data.result.map((r) => [r.metric.client_id, r.value[1]])).toEqual([['b', '20']]);
  });

  it('streams the raw query_range response for proxying', async () => {
    const res = await tsdb.queryRangeRaw({ query: metric, ...range, step: 60, extraFilters: ['{client_id="a"}'] });
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/json/);
    const body = JSON.parse(await res.text()) as { data: PromMatrix };
    expect(body.data.result.map((r) => r.metric.client_id)).toEqual(['a']);
  });

  it('lists series, label values and exports samples, all honouring extra_filters', async () => {
    const all = await tsdb.series([metric], range.start, range.end);
    expect(byClient(all.map((metric) => ({ metric }))).map((s) => s.metric)).toEqual([
      { __name__: metric, client_id: 'a', host: 'h1' },
      { __name__: metric, client_id: 'b', host: 'h2' },
    ]);
    expect(await tsdb.series([metric], range.start, range.end, ['{client_id="b"}'])).toEqual([
      { __name__: metric, client_id: 'b', host: 'h2' },
    ]);

    expect((await tsdb.labelValues('host', [metric], range)).sort()).toEqual(['h1', 'h2']);
    expect(await tsdb.labelValues('host', [metric], { ...range, extraFilters: ['{client_id="a"}'] })).toEqual(['h1']);

    const exported = await tsdb.export([metric], { extraFilters: ['{client_id="a"}'] });
    expect(exported).toEqual([
      { metric: { __name__: metric, client_id: 'a', host: 'h1' }, values: [1, 2, 3], timestamps: ts },
    ]);
  });

  it('deletes series', async () => {
    const other = `${metric}_del`;
    await tsdb.importSeries([{ metric: { __name__: other, client_id: 'a' }, values: [1], timestamps: [t0] }]);
    await tsdb.flush();
    expect(await tsdb.series([other], range.start, range.end)).toHaveLength(1);
    await tsdb.deleteSeries([other]);
    expect(await tsdb.series([other], range.start, range.end)).toEqual([]);
  });

  it('throws TsdbError with the status and the server reason', async () => {
    const err: unknown = await tsdb.queryRange({ query: 'sum(', ...range, step: 60 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TsdbError);
    expect((err as TsdbError).status).toBe(422);
    expect((err as TsdbError).body).toMatch(/cannot parse|unexpected/i);
    expect((err as TsdbError).message).toMatch(/HTTP 422/);
  });

  it('rejects malformed series before sending and reports an unreachable server', async () => {
    await expect(
      tsdb.importSeries([{ metric: { __name__: metric }, values: [1, 2], timestamps: [t0] }]),
    ).rejects.toThrow(RangeError);
    const down = new Tsdb('http://127.0.0.1:1', { timeoutMs: 1_000 });
    const err: unknown = await down.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TsdbError);
    expect((err as TsdbError).status).toBe(0);
  });
});

describe('Tsdb against a store that never answers', () => {
  it("reports the caller's deadline as a timeout (504), like its own timeout, never as an outage (503)", async () => {
    const { createServer } = await import('node:http');
    const { tsdbFailure } = await import('../../actors/fleet/metrics/tsdb-errors.ts');
    const hung = createServer(() => undefined);
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    const port = (hung.address() as { port: number }).port;
    try {
      const store = new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 60_000 });
      const deadline = AbortSignal.timeout(150);
      const byCaller = await store
        .queryRange({ query: 'up', start: 0, end: 60, step: 60 }, deadline)
        .catch((e: unknown) => e);
      expect(tsdbFailure(byCaller)?.code).toBe('timeout');
      const own = await new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 150 })
        .queryRange({ query: 'up', start: 0, end: 60, step: 60 })
        .catch((e: unknown) => e);
      expect(tsdbFailure(own)?.code).toBe('timeout');
    } finally {
      hung.closeAllConnections();
      await new Promise((r) => hung.close(r));
    }
  });
});

/** A local HTTP peer standing in for the store: `handle` answers each request once its body has arrived. */
const withPeer = async (
  handle: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, body: string) => void,
  run: (store: Tsdb, port: number) => Promise<void>,
): Promise<void> => {
  const { createServer } = await import('node:http');
  const peer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
  const port = (peer.address() as { port: number }).port;
  try {
    await run(new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 2_000 }), port);
  } finally {
    peer.closeAllConnections();
    await new Promise((r) => peer.close(r));
  }
};

describe('Tsdb imports (node:http, kept-alive connections)', () => {
  it('sends pieces as one body, in order, with its byte length, and the store reads every line back', async () => {
    const name = `${metric}_pieces`;
    const line = (host: string, v: number, t: number): string =>
      `{"metric":{"__name__":"${name}","host":"${host}","note":"ü雪"},"values":[${v}],"timestamps":[${t}]}\n`;
    await tsdb.importLines([
      line('p1', 1, t0),
      Buffer.from(line('p2', 2, t0) + line('p1', 3, t0 + 60_000), 'utf8'),
      '',
      line('p3', 4, t0),
    ]);
    await tsdb.flush();
    const rows = await tsdb.export([name], { start: range.start, end: range.end });
    expect(rows.map((r) => [r.metric.host, r.metric.note, r.values, r.timestamps]).sort()).toEqual([
      ['p1', 'ü雪', [1, 3], [t0, t0 + 60_000]],
      ['p2', 'ü雪', [2], [t0]],
      ['p3', 'ü雪', [4], [t0]],
    ]);
    await tsdb.deleteSeries([name]);

    let seen:
      { body: string; length: string | undefined; type: string | undefined; path: string | undefined } | undefined;
    await withPeer(
      (req, res, body) => {
        seen = { body, length: req.headers['content-length'], type: req.headers['content-type'], path: req.url };
        res.writeHead(204).end();
      },
      async (store) => {
        // Text and bytes alike (the ingest sends each batch's lines as a Buffer).
        await store.importLines(['a\n', Buffer.from('ü雪\n', 'utf8'), 'c\n']);
        await store.importLines([]);
        await store.importLines('');
      },
    );
    expect(seen).toEqual({
      body: 'a\nü雪\nc\n',
      length: String(Buffer.byteLength('a\nü雪\nc\n')),
      type: 'application/stream+json',
      path: '/api/v1/import',
    });
  });

  it('reports a refusal with its status and reason, and a store that never answers as a timeout', async () => {
    await withPeer(
      (req, res) =>
        res
          .writeHead(req.headers['x-never'] ? 200 : 400, { 'content-type': 'text/plain' })
          .end('cannot parse line 1: unexpected end'),
      async (store) => {
        const err: unknown = await store.importLines('{"metric":\n').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TsdbError);
        expect((err as TsdbError).status).toBe(400);
        expect((err as TsdbError).body).toBe('cannot parse line 1: unexpected end');
        expect((err as TsdbError).message).toMatch(/HTTP 400/);
      },
    );
    const { tsdbFailure } = await import('../../actors/fleet/metrics/tsdb-errors.ts');
    await withPeer(
      () => undefined,
      async (_store, port) => {
        const started = Date.now();
        const err: unknown = await new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 200 })
          .importLines('x\n')
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TsdbError);
        expect(tsdbFailure(err)?.code).toBe('timeout');
        expect(Date.now() - started).toBeLessThan(2_000);
      },
    );
    const down: unknown = await new Tsdb('http://127.0.0.1:1', { timeoutMs: 1_000 })
      .importLines('x\n')
      .catch((e: unknown) => e);
    expect(tsdbFailure(down)?.code).toBe('unavailable');
  });

  it('reuses its connection, and sends once more on a fresh one when the store drops it as the request arrives', async () => {
    const sockets: unknown[] = [];
    const received: string[] = [];
    await withPeer(
      (req, res, body) => {
        received.push(body);
        if (!sockets.includes(req.socket)) sockets.push(req.socket);
        // The second request on the first connection meets a store that closes it (an idle timeout racing the send).
        if (body === 'b\n' && req.socket === sockets[0]) return req.socket.destroy();
        res.writeHead(204).end();
      },
      async (store) => {
        await store.importLines('a\n');
        await store.importLines('b\n');
        expect(received).toEqual(['a\n', 'b\n', 'b\n']);
        expect(sockets).toHaveLength(2);
      },
    );
    // Every pooled connection dropped at once (a store restart): the repeat opens a connection of its own.
    const pooled: unknown[] = [];
    const seen2: string[] = [];
    await withPeer(
      (req, res, body) => {
        seen2.push(body);
        if (body.startsWith('warm')) pooled.push(req.socket);
        if (body === 'after\n' && pooled.includes(req.socket)) return req.socket.destroy();
        // Held a moment, so the two warm-up imports run on two connections at once.
        setTimeout(() => res.writeHead(204).end(), body.startsWith('warm') ? 50 : 0);
      },
      async (store) => {
        await Promise.all([store.importLines('warm1\n'), store.importLines('warm2\n')]);
        expect(new Set(pooled).size).toBe(2);
        await store.importLines('after\n');
        expect(seen2.filter((b) => b === 'after\n')).toHaveLength(2);
      },
    );
    // Dropped again on the fresh connection: reported, not retried forever.
    let calls = 0;
    await withPeer(
      (req) => {
        calls++;
        req.socket.destroy();
      },
      async (store) => {
        const err: unknown = await store.importLines('c\n').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TsdbError);
        expect((err as TsdbError).status).toBe(0);
        expect(calls).toBe(1);
      },
    );
  });
  it('keeps one connection for large imports answered as their last bytes arrive, and an answer before the body ends it', async () => {
    const sockets = new Set<unknown>();
    let bytes = 0;
    await withPeer(
      (req, res, body) => {
        sockets.add(req.socket);
        bytes += Buffer.byteLength(body);
        res.writeHead(204).end();
      },
      async (store) => {
        const big = Buffer.alloc(4 * 1024 * 1024, 0x61);
        // Settling waits for the body's last write, which may be reported after the answer: the connection stays.
        for (let i = 0; i < 8; i++) await store.importLines(big);
        expect(bytes).toBe(8 * big.length);
        expect(sockets.size).toBe(1);
      },
    );
    // A peer answering 204 at once and then reading nothing more (a proxy gone wrong): the body can never finish going
    // out, and the import ends at its timeout rather than waiting for it forever.
    const { createServer: createTcp } = await import('node:net');
    const held: import('node:net').Socket[] = [];
    const stalled = createTcp((socket) => {
      held.push(socket);
      socket.once('data', () => {
        socket.write('HTTP/1.1 204 No Content\r\n\r\n');
        socket.pause();
      });
    });
    await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
    try {
      const store = new Tsdb(`http://127.0.0.1:${(stalled.address() as { port: number }).port}`, { timeoutMs: 1_000 });
      const started = Date.now();
      const err: unknown = await store.importLines(Buffer.alloc(64 * 1024 * 1024, 0x63)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TsdbError);
      expect((err as TsdbError).message).toMatch(/timed out after 1000ms/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const h of held) h.destroy();
      await new Promise((r) => stalled.close(r));
    }
    // A store refusing as soon as the headers arrive, before reading a 64 MB body: the refusal is reported at once
    // and the body is no longer sent (the connection is closed), so its memory may be reused.
    const { createServer } = await import('node:http');
    let received = 0;
    const peer = createServer((req, res) => {
      req.on('data', (c: Buffer) => (received += c.length));
      res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' }).end('too large');
    });
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
    try {
      const store = new Tsdb(`http://127.0.0.1:${(peer.address() as { port: number }).port}`, { timeoutMs: 5_000 });
      const err: unknown = await store.importLines(Buffer.alloc(64 * 1024 * 1024, 0x62)).catch((e: unknown) => e);
      expect((err as TsdbError).status).toBe(400);
      expect((err as TsdbError).body).toBe('too large');
      const after = received;
      await new Promise((r) => setTimeout(r, 200));
      expect(received).toBe(after);
      expect(received).toBeLessThan(64 * 1024 * 1024);
    } finally {
      peer.closeAllConnections();
      await new Promise((r) => peer.close(r));
    }
  });
});

describe('Tsdb against a store asking for credentials, and answers that break off', () => {
  it('sends the URL credentials as Basic authorization on queries and imports alike', async () => {
    const { createServer } = await import('node:http');
    const auth: (string | undefined)[] = [];
    const peer = createServer((req, res) => {
      auth.push(req.headers.authorization);
      req.resume();
      req.on('end', () => res.writeHead(req.url === '/health' ? 200 : 204).end());
    });
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
    const port = (peer.address() as { port: number }).port;
    try {
      const store = new Tsdb(`http://vm%20user:p%40ss@127.0.0.1:${port}/`);
      await store.ping();
      await store.importLines('x\n');
      const expected = `Basic ${Buffer.from('vm user:p@ss').toString('base64')}`;
      expect(auth).toEqual([expected, expected]);
    } finally {
      peer.closeAllConnections();
      await new Promise((r) => peer.close(r));
    }
  });

  it('reports an import whose answer stops after its headers as a timeout, and one cut mid-body as a failure', async () => {
    const { createServer } = await import('node:http');
    const { tsdbFailure } = await import('../../actors/fleet/metrics/tsdb-errors.ts');
    const peer = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(400, { 'content-length': '100' });
        res.write('cannot parse');
        if (req.headers['x-case'] === undefined) setTimeout(() => res.destroy(), 20);
      });
    });
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
    const port = (peer.address() as { port: number }).port;
    try {
      const cut: unknown = await new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 2_000 })
        .importLines('x\n')
        .catch((e: unknown) => e);
      expect(cut).toBeInstanceOf(TsdbError);
      expect(tsdbFailure(cut)?.code).toBe('unavailable');
    } finally {
      peer.closeAllConnections();
      await new Promise((r) => peer.close(r));
    }
    const stalled = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial');
      });
    });
    await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
    const port2 = (stalled.address() as { port: number }).port;
    try {
      const started = Date.now();
      const err: unknown = await new Tsdb(`http://127.0.0.1:${port2}`, { timeoutMs: 200 })
        .importLines('x\n')
        .catch((e: unknown) => e);
      expect(tsdbFailure(err)?.code).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      stalled.closeAllConnections();
      await new Promise((r) => stalled.close(r));
    }
  });
});

describe('Tsdb queries (node:http): timers and signals let go with the answer', () => {
  const form = { query: 'up', start: 0, end: 60, step: 60 };
  const matrix = JSON.stringify({
    status: 'success',
    data: { resultType: 'matrix', result: [{ metric: { __name__: 'up' }, values: [[60, '1']] }] },
  });

  it("holds the caller's signal while the query runs, and lets it go once the answer is read", async () => {
    const { EventEmitter } = await import('node:events');
    const getEventListeners = EventEmitter.getEventListeners.bind(EventEmitter);
    let answer: (() => void) | undefined;
    await withPeer(
      (req, res) => {
        if (req.url === '/api/v1/series')
          res.writeHead(422, { 'content-type': 'application/json' }).end('{"status":"error","error":"cannot parse"}');
        else answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(matrix);
      },
      async (store) => {
        const caller = new AbortController();
        const pending = store.queryRange(form, caller.signal);
        await vi.waitFor(() => expect(answer).toBeDefined());
        expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
        answer!();
        expect((await pending).data.resultType).toBe('matrix');
        // A signal that outlives the call (a request's deadline) keeps nothing of it alive.
        expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
        // And a refusal lets it go too.
        const refused = await store.series(['up'], 0, 60, [], caller.signal).catch((e: unknown) => e);
        expect((refused as TsdbError).status).toBe(422);
        expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
      },
    );
  });

  it('times out an answer that stops mid-body, and ends a streamed one when the caller aborts', async () => {
    const { tsdbFailure } = await import('../../actors/fleet/metrics/tsdb-errors.ts');
    await withPeer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(matrix.length) });
        res.write(matrix.slice(0, 20));
      },
      async (_store, port) => {
        const slow = new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 200 });
        const started = Date.now();
        const err: unknown = await slow.queryRange(form).catch((e: unknown) => e);
        expect((err as TsdbError).message).toMatch(/timed out after 200ms/);
        expect(tsdbFailure(err)?.code).toBe('timeout');
        expect(Date.now() - started).toBeLessThan(2_000);

        const caller = new AbortController();
        const answer = await new Tsdb(`http://127.0.0.1:${port}`, { timeoutMs: 60_000 }).queryRangeRaw(form, {
          signal: caller.signal,
        });
        expect(answer.status).toBe(200);
        const first = await new Promise<Buffer>((r) => answer.body.once('data', r));
        expect(first.toString()).toBe(matrix.slice(0, 20));
        const rest = answer.text().catch((e: unknown) => e);
        caller.abort();
        const cut = await rest;
        expect(cut).toBeInstanceOf(TsdbError);
        expect((cut as TsdbError).message).toMatch(/request deadline passed/);
        expect(answer.body.destroyed).toBe(true);
      },
    );
  });

  it('reports an answer that is not JSON as the store failing, never as an internal error', async () => {
    const { tsdbFailure } = await import('../../actors/fleet/metrics/tsdb-errors.ts');
    await withPeer(
      (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>a proxy login page</html>'),
      async (store) => {
        const err: unknown = await store.queryRange(form).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TsdbError);
        expect((err as TsdbError).message).toMatch(/^tsdb \/api\/v1\/query_range: the answer is not JSON: <html>/);
        expect(tsdbFailure(err)?.code).toBe('bad_gateway');
      },
    );
  });
});
