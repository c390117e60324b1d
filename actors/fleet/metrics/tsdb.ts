/**
 * VictoriaMetrics over its HTTP API (host, process and container metrics; PromQL). Tenancy is enforced by the
 * caller passing `extraFilters` (VictoriaMetrics' `extra_filters[]`, e.g. `{client_id="42"}`), which the server ANDs
 * into every selector of the query, so a user-supplied PromQL expression cannot read other tenants' series.
 *
 * One single-node server takes writes and reads under one base URL; a cluster takes writes at vminsert
 * (`/insert/<accountID>/prometheus`) and reads at vmselect (`/select/<accountID>/prometheus`), each appending the same
 * API paths (TsdbBases).
 */

import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';

/** One series for /api/v1/import: values[i] was sampled at timestamps[i] (epoch milliseconds). */
export interface ImportSeries {
  /** `__name__` plus labels. */
  metric: { __name__: string } & Record<string, string>;
  values: number[];
  timestamps: number[];
}

/** Part of an import body: text, or its UTF-8 bytes. */
export type ImportPiece = string | Uint8Array;

/** A time as epoch seconds (number, fractions allowed), a Date, or a string VictoriaMetrics accepts (RFC3339, `-1h`). */
export type TsdbTime = number | Date | string;

export interface RangeQuery {
  query: string;
  start: TsdbTime;
  end: TsdbTime;
  /** Seconds (number) or a duration string such as `60s`. */
  step: number | string;
  /** Series selectors ANDed into every selector of the query, e.g. `{client_id="42"}`. */
  extraFilters?: readonly string[];
  /** Per-query timeout the server applies (a duration, e.g. `10s`). */
  timeout?: string;
  /**
   * `nocache=1`: no response cache (late samples, e.g. a backlog replayed after an outage, are seen at once) and no
   * rounding of start/end to the step (and no latency-offset shift of a query near now).
   */
  nocache?: boolean;
}

export interface InstantQuery {
  query: string;
  time?: TsdbTime;
  extraFilters?: readonly string[];
  timeout?: string;
  nocache?: boolean;
}

/** Time range and tenant filters for the metadata endpoints (series, label values, export). */
export interface SeriesOptions {
  start?: TsdbTime;
  end?: TsdbTime;
  extraFilters?: readonly string[];
  /** Ends the request early (the caller's deadline). */
  signal?: AbortSignal;
}

/** Prometheus-style API envelope as VictoriaMetrics returns it. */
export interface PromResponse<T> {
  status: 'success' | 'error';
  data: T;
  errorType?: string;
  error?: string;
  warnings?: string[];
}
export type PromSample = [number, string];
export interface PromMatrix {
  resultType: 'matrix';
  result: { metric: Record<string, string>; values: PromSample[] }[];
}
export interface PromVector {
  resultType: 'vector';
  result: { metric: Record<string, string>; value: PromSample }[];
}
export interface PromScalar {
  resultType: 'scalar' | 'string';
  result: PromSample;
}
export type PromQueryData = PromMatrix | PromVector | PromScalar;

/** Raised for any non-2xx answer; `status` is the HTTP status, `body` the response text (VictoriaMetrics' reason). */
export class TsdbError extends Error {
  override name = 'TsdbError';
  readonly status: number;
  readonly body: string;
  constructor(message: string, status: number, body: string) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/**
 * Where the store is written and read. A single-node server is both (`http://127.0.0.1:8428`); a cluster's bases are
 * vminsert's and vmselect's, with the tenant: `http://vminsert:8480/insert/0/prometheus` and
 * `http://vmselect:8481/select/0/prometheus`. Either may carry a user and password (sent as Basic authorization).
 */
export interface TsdbBases {
  /** Imports (`/api/v1/import`). */
  write: string;
  /**
   * Queries, series, label values and exports. Deletions go here too (VictoriaMetrics' vmselect serves them): under a
   * cluster base's `/delete/<accountID>/prometheus` twin of its `/select/…` path.
   */
  read: string;
}

/**
 * A cluster component's base: its path ends in `/insert/<accountID>/prometheus` (vminsert) or
 * `/select/<accountID>/prometheus` (vmselect); what comes before it (a proxy's path, `-http.pathPrefix`) is the
 * component's own root, where its `/health` is.
 */
const CLUSTER_BASE = /\/(insert|select)\/([^/]+)\/prometheus$/;

export interface TsdbOptions {
  /** Default request timeout; queries may pass a larger one. */
  timeoutMs?: number;
}

export class Tsdb {
  /** Where imports go. */
  private readonly writes: Route;
  /** Where queries, series, label values and exports go. */
  private readonly reads: Route;
  /** Where deletions go: the read base, or a cluster read base's `/delete/…` twin. */
  private readonly deletes: Route;
  /** The `/health` of each base (once when both are one server). */
  private readonly health: Route[];
  private readonly timeoutMs: number;

  /**
   * One URL (a single-node server, for writes and reads alike) or the write and read bases (tsdbBases() in config.ts
   * decides them from the configuration). Only http(s); credentials in a URL become Basic authorization.
   */
  constructor(base: string | TsdbBases, opts: TsdbOptions = {}) {
    const [bases, names] =
      typeof base === 'string'
        ? [
            { write: base, read: base },
            { write: 'SVC_TSDB_URL', read: 'SVC_TSDB_URL' },
          ]
        : [base, { write: 'SVC_TSDB_WRITE_URL (or SVC_TSDB_URL)', read: 'SVC_TSDB_READ_URL (or SVC_TSDB_URL)' }];
    // Bases on one server (same scheme, credentials, host and port) share its kept-alive connections.
    const servers = new Map<string, Server>();
    const route = (raw: string, name: string): Route => {
      const url = new URL(raw);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new RangeError(`${name} must be http(s), not ${url.protocol}`);
      const key = `${url.protocol}//${url.username}:${url.password}@${url.host}`;
      let server = servers.get(key);
      if (!server) servers.set(key, (server = new Server(url)));
      return { server, prefix: url.pathname.replace(/\/+$/, '') };
    };
    this.writes = route(bases.write, names.write);
    this.reads = route(bases.read, names.read);
    this.deletes = { ...this.reads, prefix: this.reads.prefix.replace(/\/select(\/[^/]+\/prometheus)$/, '/delete$1') };
    const healthOf = (r: Route, name?: string): Route => ({
      server: r.server,
      prefix: r.prefix.replace(CLUSTER_BASE, ''),
      ...(name ? { name } : {}),
    });
    const [w, r] = [healthOf(this.writes), healthOf(this.reads)];
    this.health =
      w.server === r.server && w.prefix === r.prefix
        ? [w]
        : [healthOf(this.writes, 'write base'), healthOf(this.reads, 'read base')];
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** Writes series through /api/v1/import (JSON lines). Data becomes searchable within ~1s, or at once after flush(). */
  async importSeries(rows: readonly ImportSeries[]): Promise<void> {
    if (rows.length === 0) return;
    for (const r of rows) {
      if (r.values.length !== r.timestamps.length)
        throw new RangeError(
          `series ${r.metric.__name__}: ${r.values.length} values for ${r.timestamps.length} timestamps`,
        );
    }
    await this.importLines(
      rows.map((r) => JSON.stringify({ metric: r.metric, values: r.values, timestamps: r.timestamps })).join('\n') +
        '\n',
    );
  }

  /**
   * Writes series already in /api/v1/import's form: JSON lines of {metric, values, timestamps}, each ending in a
   * newline (the metrics ingest builds them straight from agent batches, without ImportSeries objects). Given
   * several pieces, sends them one after the other as one body, never joined into one string. Settles only once no
   * byte of the body is being sent any more (the ingest writes its next import into the same buffer).
   *
   * The import is the ingest's hot path, and its process's main thread is what limits the ingest: the pieces are
   * written as they are (see exchange()).
   */
  async importLines(body: ImportPiece | readonly ImportPiece[]): Promise<void> {
    const pieces = typeof body === 'string' || body instanceof Uint8Array ? [body] : (body as readonly ImportPiece[]);
    let bytes = 0;
    for (const p of pieces) bytes += Buffer.byteLength(p);
    if (bytes === 0) return;
    await (
      await this.exchange(this.writes, '/api/v1/import', {
        method: 'POST',
        body: { pieces, bytes, contentType: 'application/stream+json' },
      })
    ).text();
  }

  /** PromQL over a range: `data.resultType` is `matrix`. */
  async queryRange(q: RangeQuery, signal?: AbortSignal): Promise<PromResponse<PromQueryData>> {
    return (await this.queryRangeRaw(q, { signal })).json<PromResponse<PromQueryData>>();
  }

  /**
   * Same request as queryRange, but the answer unread, so a gateway can stream its `body` through; `timeoutMs`
   * replaces the store's default for this call (the caller's deadline, say).
   */
  async queryRangeRaw(q: RangeQuery, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<TsdbAnswer> {
    const form = new URLSearchParams({
      query: q.query,
      start: toTime(q.start),
      end: toTime(q.end),
      step: String(q.step),
    });
    if (q.timeout) form.set('timeout', q.timeout);
    if (q.nocache) form.set('nocache', '1');
    appendFilters(form, q.extraFilters);
    return this.post(this.reads, '/api/v1/query_range', form, opts);
  }

  /** Instant PromQL query: `data.resultType` is usually `vector`. */
  async query(q: InstantQuery, signal?: AbortSignal): Promise<PromResponse<PromQueryData>> {
    return (await this.queryRaw(q, signal)).json<PromResponse<PromQueryData>>();
  }

  async queryRaw(q: InstantQuery, signal?: AbortSignal): Promise<TsdbAnswer> {
    const form = new URLSearchParams({ query: q.query });
    if (q.time !== undefined) form.set('time', toTime(q.time));
    if (q.timeout) form.set('timeout', q.timeout);
    if (q.nocache) form.set('nocache', '1');
    appendFilters(form, q.extraFilters);
    return this.post(this.reads, '/api/v1/query', form, { signal });
  }

  /** Label sets of the series matching any of `match` in [start, end] (without a range the server looks at the last day). */
  async series(
    match: readonly string[],
    start?: TsdbTime,
    end?: TsdbTime,
    extraFilters?: readonly string[],
    signal?: AbortSignal,
  ): Promise<Record<string, string>[]> {
    const form = seriesForm(match, { start, end, extraFilters });
    return (
      await (
        await this.post(this.reads, '/api/v1/series', form, { signal })
      ).json<PromResponse<Record<string, string>[]>>()
    ).data;
  }

  /** Values of one label, optionally limited to series matching `match` (e.g. a metric name for a picker). */
  async labelValues(label: string, match: readonly string[] = [], opts: SeriesOptions = {}): Promise<string[]> {
    const form = seriesForm(match, opts);
    // GET: older VictoriaMetrics releases (the Debian package is 1.79) answer this endpoint on GET only.
    const res = await this.exchange(
      this.reads,
      `/api/v1/label/${encodeURIComponent(label)}/values?${form.toString()}`,
      {
        method: 'GET',
        signal: opts.signal,
      },
    );
    return (await res.json<PromResponse<string[]>>()).data;
  }

  /** Raw samples of the matching series, parsed from /api/v1/export's JSON lines (same shape importSeries takes). */
  async export(match: readonly string[], opts: SeriesOptions = {}): Promise<ImportSeries[]> {
    const text = await (await this.exportRaw(match, opts)).text();
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as ImportSeries);
  }

  /** /api/v1/export unread (JSON lines), for streaming large exports. */
  async exportRaw(match: readonly string[], opts: SeriesOptions = {}): Promise<TsdbAnswer> {
    return this.post(this.reads, '/api/v1/export', seriesForm(match, opts), { signal: opts.signal });
  }

  /**
   * Deletes every sample of the matching series (tenant removal, test clean-up). Irreversible. Sent to the read base
   * (a cluster's vmselect serves deletions, under `/delete/<accountID>/prometheus`).
   */
  async deleteSeries(match: readonly string[]): Promise<void> {
    if (match.length === 0) throw new RangeError('deleteSeries needs at least one selector');
    await (await this.post(this.deletes, '/api/v1/admin/tsdb/delete_series', seriesForm(match, {}))).text();
  }

  /**
   * Makes everything imported so far searchable now (tests; the server otherwise does it within about a second), at
   * the write base's `/internal/force_flush`. A cluster has no such call on vminsert (only each vmstorage has it):
   * against a cluster write base this refuses, naming why.
   */
  async flush(): Promise<void> {
    if (CLUSTER_BASE.test(this.writes.prefix))
      throw new Error(
        'tsdb flush: a VictoriaMetrics cluster has no /internal/force_flush on vminsert (only on each vmstorage); ' +
          'its imports become searchable on their own',
      );
    await (await this.exchange(this.writes, '/internal/force_flush', { method: 'GET' })).text();
  }

  /**
   * Checks that the store answers: `/health` of the write base and of the read base (one check when they are one
   * server). For a cluster base that is the component's own `/health`, at its root (vminsert's, vmselect's), not under
   * `/insert/…` or `/select/…`; otherwise it goes under the base's path, as every call does.
   */
  async ping(): Promise<void> {
    await Promise.all(
      this.health.map(async (r) => {
        await (await this.exchange(r, '/health', { method: 'GET', timeoutMs: 2_000 })).text();
      }),
    );
  }

  /** A form POST (the query and series endpoints take their parameters as a form, without a URL length limit). */
  private post(
    route: Route,
    path: string,
    form: URLSearchParams,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<TsdbAnswer> {
    const text = form.toString();
    return this.exchange(route, path, {
      method: 'POST',
      body: { pieces: [text], bytes: Buffer.byteLength(text), contentType: 'application/x-www-form-urlencoded' },
      ...opts,
    });
  }

  /**
   * One request and its answer, through node:http on kept-alive connections. Resolves with a 2xx answer whose body is
   * still to be read (TsdbAnswer); anything else rejects with a TsdbError: a non-2xx answer with the server's text, no
   * answer in `timeoutMs` or before `signal` aborts (the caller's deadline) as a timeout, a failed connection with its
   * reason. The timeout and `signal` stay armed until the answer's body is read and the request's own body has gone
   * out; then both are let go. A kept-alive connection the server closed while idle fails at once with ECONNRESET: that
   * attempt is repeated once on a fresh connection (every call here may be repeated: reads, and imports, which the
   * store deduplicates).
   *
   * Not fetch: each fetch kept its request, answer and stream objects alive until its AbortSignal.timeout fired, so
   * they were promoted out of the young generation and made a chart-serving process's scavenges long; and fetch cost
   * several times the CPU per call (the figures: docs/benchmarks.md).
   */
  private async exchange(route: Route, path: string, opts: ExchangeOptions): Promise<TsdbAnswer> {
    const started = Date.now();
    try {
      return await this.attempt(route, path, opts, false);
    } catch (err) {
      if (!(err instanceof StaleConnection)) throw err;
      // The repeat gets what is left of the exchange's time, not a timeout of its own.
      const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) throw new TsdbError(`${whereOf(route, path)}: timed out after ${timeoutMs}ms`, 0, '');
      return this.attempt(route, path, { ...opts, timeoutMs: left }, true).catch((again: unknown) => {
        throw again instanceof StaleConnection
          ? new TsdbError(`${whereOf(route, path)}: connection reset`, 0, '')
          : again;
      });
    }
  }

  private attempt(route: Route, path: string, opts: ExchangeOptions, fresh: boolean): Promise<TsdbAnswer> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const where = whereOf(route, path);
    const server = route.server;
    return new Promise<TsdbAnswer>((resolve, reject) => {
      const signal = opts.signal;
      if (signal?.aborted) return reject(new TsdbError(`${where}: timed out: the request deadline passed`, 0, ''));
      const pieces = opts.body?.pieces ?? [];
      const headers: http.OutgoingHttpHeaders = {
        'accept-encoding': 'identity',
        ...(server.authorization ? { authorization: server.authorization } : {}),
      };
      if (opts.body) {
        headers['content-type'] = opts.body.contentType;
        headers['content-length'] = opts.body.bytes;
      }
      const req = (server.https ? https : http).request({
        ...server.origin,
        path: route.prefix + path,
        method: opts.method,
        // The repeat after a stale connection opens one of its own: the pool may hold more the store has closed.
        agent: fresh ? false : server.agent(),
        headers,
      });
      /** Why this side ended the exchange, if it did. */
      let cut: string | undefined;
      const failure = (err: unknown): TsdbError =>
        new TsdbError(`${where}: ${cut ?? (err instanceof Error ? err.message : String(err))}`, 0, '');
      const timer = setTimeout(() => {
        cut = `timed out after ${timeoutMs}ms`;
        req.destroy(new Cut());
      }, timeoutMs);
      const onAbort = (): void => {
        cut = 'timed out: the request deadline passed';
        req.destroy(new Cut());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      let answered = false;
      let sendingFailed: ((err: unknown) => void) | undefined;
      req.on('error', (err: NodeJS.ErrnoException) => {
        // Once answered, the answer reports the failure (TsdbAnswer), through its body or the rest of the request's.
        if (answered) return sendingFailed?.(err);
        release();
        if (cut === undefined && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE'))
          reject(new StaleConnection());
        else reject(failure(err));
      });
      req.on('response', (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        // The request's body has gone out: what must hold before the caller may reuse its memory. A request ended
        // before that (its timeout, the caller's deadline) fails the answer.
        const bodySent = new Promise<void>((done, fail) => {
          if (req.writableFinished) return done();
          req.once('finish', done);
          sendingFailed = (err) => fail(failure(err));
          req.once('close', () =>
            req.writableFinished ? done() : fail(failure(new Error('the request ended before its body went out'))),
          );
        });
        bodySent.catch(() => undefined);
        if (status >= 200 && status < 300) {
          resolve(new TsdbAnswer(where, status, res.headers['content-type'], res, bodySent, release, failure));
          return;
        }
        // A refusal: its text is the reason; one given before the whole body went out stops the sending.
        new TsdbAnswer(where, status, res.headers['content-type'], res, Promise.resolve(), release, failure)
          .text()
          .then(
            (text) => {
              if (!req.writableFinished) req.destroy();
              reject(new TsdbError(`${where}: HTTP ${status}: ${text.slice(0, 500)}`, status, text));
            },
            (err: unknown) => {
              if (!req.writableFinished) req.destroy();
              reject(err);
            },
          );
      });
      // Written before the socket is assigned: the request keeps them and flushes them with its head in one writev.
      for (const p of pieces) req.write(p);
      req.end();
    });
  }
}

/** One server the store's calls go to: its origin, its credentials and its kept-alive connections. */
class Server {
  readonly https: boolean;
  readonly origin: { hostname: string; port: string };
  /** `Basic …` when the URL carries a user (a store behind vmauth or a proxy asking for it). */
  readonly authorization: string | undefined;
  // Free sockets of a keep-alive agent are unref'd: they never keep a process alive.
  private keptAlive: http.Agent | undefined;

  constructor(url: URL) {
    // Credentials in the URL become an Authorization header on every request.
    if (url.username !== '' || url.password !== '') {
      this.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
    }
    this.https = url.protocol === 'https:';
    // hostname keeps an IPv6 address's brackets, which node:http does not take.
    this.origin = { hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port };
  }

  agent(): http.Agent {
    return (this.keptAlive ??= this.https ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true }));
  }
}

/** Where one kind of call goes: a server, and the base URL's path (without its trailing slash) the call's path follows. */
interface Route {
  server: Server;
  prefix: string;
  /** Which base, in messages, when that is not plain from the path (the two health checks). */
  name?: string;
}

/** `tsdb <path>` (and which base, when it says), for messages. */
const whereOf = (route: Route, path: string): string => `tsdb ${pathOnly(path)}${route.name ? ` (${route.name})` : ''}`;

interface ExchangeOptions {
  method: 'GET' | 'POST';
  body?: { pieces: readonly ImportPiece[]; bytes: number; contentType: string };
  /** Aborts the exchange as the caller's deadline passing (a timeout). */
  signal?: AbortSignal;
  timeoutMs?: number;
}

/**
 * A 2xx answer of the store, its body not read yet: read it once, with text(), json(), or as the stream `body` (the
 * gateway pipes a query's answer to its client). The exchange's timeout and the caller's signal hold until the body
 * has been read to its end or has failed; a body cut short rejects text() / json() with the exchange's reason.
 */
export class TsdbAnswer {
  private readonly where: string;
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: Readable;
  private readonly bodySent: Promise<void>;
  private readonly failure: (err: unknown) => TsdbError;
  constructor(
    /** `tsdb <path>`, for messages. */
    where: string,
    status: number,
    contentType: string | undefined,
    /** The answer's bytes as they arrive (a Node stream): read it, or destroy it to give the connection up. */
    body: Readable,
    bodySent: Promise<void>,
    release: () => void,
    failure: (err: unknown) => TsdbError,
  ) {
    this.where = where;
    this.status = status;
    this.contentType = contentType;
    this.body = body;
    this.bodySent = bodySent;
    this.failure = failure;
    // However the body ends (read to its end, destroyed, cut), and once the request's own body has gone out or
    // failed, the timer and the signal's listener go.
    body.once('close', () => void bodySent.then(release, release));
  }

  /** The whole body as UTF-8, once it has arrived and the request's own body has gone out. */
  text(): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let ended = false;
      this.body.on('data', (c: Buffer) => chunks.push(c));
      this.body.once('end', () => {
        ended = true;
        this.bodySent.then(() => resolve(Buffer.concat(chunks).toString('utf8')), reject);
      });
      this.body.once('error', (err) => reject(this.failure(err)));
      this.body.once('close', () => {
        if (!ended) reject(this.failure(new Error('the answer ended early')));
      });
    });
  }

  async json<T = unknown>(): Promise<T> {
    const text = await this.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new TsdbError(`${this.where}: the answer is not JSON: ${text.slice(0, 200)}`, this.status, text);
    }
  }
}

const pathOnly = (path: string): string => path.split('?')[0]!;

function seriesForm(match: readonly string[], opts: SeriesOptions): URLSearchParams {
  const form = new URLSearchParams();
  for (const m of match) form.append('match[]', m);
  if (opts.start !== undefined) form.set('start', toTime(opts.start));
  if (opts.end !== undefined) form.set('end', toTime(opts.end));
  appendFilters(form, opts.extraFilters);
  return form;
}

function appendFilters(form: URLSearchParams, filters: readonly string[] | undefined): void {
  for (const f of filters ?? []) form.append('extra_filters[]', f);
}

function toTime(t: TsdbTime): string {
  if (t instanceof Date) return (t.getTime() / 1000).toString();
  return String(t);
}

/** This side ended the exchange (its timeout, the caller's deadline); the reason is kept beside it. */
class Cut extends Error {}
/** A kept-alive connection the server had closed: the request never reached it, so it is sent again once. */
class StaleConnection extends Error {}
