/**
 * VictoriaMetrics over its HTTP API (host, process and container metrics; PromQL). Tenancy is enforced by the
 * caller passing `extraFilters` (VictoriaMetrics' `extra_filters[]`, e.g. `{client_id="42"}`), which the server ANDs
 * into every selector of the query, so a user-supplied PromQL expression cannot read other tenants' series.
 */

import http from 'node:http';
import https from 'node:https';

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
  constructor(
    message: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(message);
  }
}

export interface TsdbOptions {
  /** Default request timeout; queries may pass a larger one. */
  timeoutMs?: number;
}

export class Tsdb {
  private readonly base: string;
  private readonly timeoutMs: number;
  // Free sockets of a keep-alive agent are unref'd: they never keep a process alive.
  private httpAgent: http.Agent | undefined;
  private httpsAgent: https.Agent | undefined;

  /** `Basic …` when the URL carries a user (a store behind vmauth or a proxy asking for it). */
  private readonly authorization: string | undefined;

  constructor(baseUrl: string, opts: TsdbOptions = {}) {
    // Credentials in the URL become an Authorization header on every request: fetch refuses URLs that carry them.
    const url = new URL(baseUrl);
    if (url.username !== '' || url.password !== '') {
      this.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    this.base = url.toString().replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** Writes series through /api/v1/import (JSON lines). Data becomes searchable within ~1s, or at once after flush(). */
  async importSeries(rows: readonly ImportSeries[]): Promise<void> {
    if (rows.length === 0) return;
    for (const r of rows) {
      if (r.values.length !== r.timestamps.length) throw new RangeError(`series ${r.metric.__name__}: ${r.values.length} values for ${r.timestamps.length} timestamps`);
    }
    await this.importLines(rows.map((r) => JSON.stringify({ metric: r.metric, values: r.values, timestamps: r.timestamps })).join('\n') + '\n');
  }

  /**
   * Writes series already in /api/v1/import's form: JSON lines of {metric, values, timestamps}, each ending in a
   * newline (the metrics ingest builds them straight from agent batches, without ImportSeries objects). Given
   * several pieces, sends them one after the other as one body, never joined into one string. Settles only once no
   * byte of the body is being sent any more (the ingest writes its next import into the same buffer).
   *
   * Through node:http rather than fetch: for a 5.7 MB import, fetch cost 21-27 ms of CPU (the body encoded, copied
   * into a web stream, written in small pieces), node:http 6 ms, measured side by side. The import is the ingest's
   * hot path, and its process's main thread is what limits the ingest.
   */
  async importLines(body: ImportPiece | readonly ImportPiece[]): Promise<void> {
    const pieces = typeof body === 'string' || body instanceof Uint8Array ? [body] : (body as readonly ImportPiece[]);
    let bytes = 0;
    for (const p of pieces) bytes += Buffer.byteLength(p);
    if (bytes === 0) return;
    await this.post('/api/v1/import', pieces, bytes, 'application/stream+json');
  }

  /** PromQL over a range: `data.resultType` is `matrix`. */
  async queryRange(q: RangeQuery, signal?: AbortSignal): Promise<PromResponse<PromQueryData>> {
    return (await this.queryRangeRaw(q, signal)).json() as Promise<PromResponse<PromQueryData>>;
  }

  /** Same request as queryRange, but the untouched Response (status 2xx) so a gateway can stream `body` through. */
  async queryRangeRaw(q: RangeQuery, signal?: AbortSignal): Promise<Response> {
    const form = new URLSearchParams({ query: q.query, start: toTime(q.start), end: toTime(q.end), step: String(q.step) });
    if (q.timeout) form.set('timeout', q.timeout);
    if (q.nocache) form.set('nocache', '1');
    appendFilters(form, q.extraFilters);
    return this.send('/api/v1/query_range', { method: 'POST', body: form, signal });
  }

  /** Instant PromQL query: `data.resultType` is usually `vector`. */
  async query(q: InstantQuery, signal?: AbortSignal): Promise<PromResponse<PromQueryData>> {
    return (await this.queryRaw(q, signal)).json() as Promise<PromResponse<PromQueryData>>;
  }

  async queryRaw(q: InstantQuery, signal?: AbortSignal): Promise<Response> {
    const form = new URLSearchParams({ query: q.query });
    if (q.time !== undefined) form.set('time', toTime(q.time));
    if (q.timeout) form.set('timeout', q.timeout);
    if (q.nocache) form.set('nocache', '1');
    appendFilters(form, q.extraFilters);
    return this.send('/api/v1/query', { method: 'POST', body: form, signal });
  }

  /** Label sets of the series matching any of `match` in [start, end] (without a range the server looks at the last day). */
  async series(match: readonly string[], start?: TsdbTime, end?: TsdbTime, extraFilters?: readonly string[], signal?: AbortSignal): Promise<Record<string, string>[]> {
    const form = seriesForm(match, { start, end, extraFilters });
    const res = await this.send('/api/v1/series', { method: 'POST', body: form, signal });
    return ((await res.json()) as PromResponse<Record<string, string>[]>).data;
  }

  /** Values of one label, optionally limited to series matching `match` (e.g. a metric name for a picker). */
  async labelValues(label: string, match: readonly string[] = [], opts: SeriesOptions = {}): Promise<string[]> {
    const form = seriesForm(match, opts);
    // GET: older VictoriaMetrics releases (the Debian package is 1.79) answer this endpoint on GET only.
    const res = await this.send(`/api/v1/label/${encodeURIComponent(label)}/values?${form.toString()}`, { method: 'GET', signal: opts.signal });
    return ((await res.json()) as PromResponse<string[]>).data;
  }

  /** Raw samples of the matching series, parsed from /api/v1/export's JSON lines (same shape importSeries takes). */
  async export(match: readonly string[], opts: SeriesOptions = {}): Promise<ImportSeries[]> {
    const text = await (await this.exportRaw(match, opts)).text();
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as ImportSeries);
  }

  /** /api/v1/export as an untouched Response (JSON lines), for streaming large exports. */
  async exportRaw(match: readonly string[], opts: SeriesOptions = {}, signal?: AbortSignal): Promise<Response> {
    return this.send('/api/v1/export', { method: 'POST', body: seriesForm(match, opts), signal: signal ?? opts.signal });
  }

  /** Deletes every sample of the matching series (tenant removal, test clean-up). Irreversible. */
  async deleteSeries(match: readonly string[]): Promise<void> {
    if (match.length === 0) throw new RangeError('deleteSeries needs at least one selector');
    await this.send('/api/v1/admin/tsdb/delete_series', { method: 'POST', body: seriesForm(match, {}) });
  }

  /** Makes everything imported so far searchable now (tests; the server otherwise does it within about a second). */
  async flush(): Promise<void> {
    await this.send('/internal/force_flush', { method: 'GET' });
  }

  async ping(): Promise<void> {
    await this.send('/health', { method: 'GET' }, 2_000);
  }

  /**
   * A POST of `pieces` (`bytes` long in all) through node:http on kept-alive connections, with the same timeout and
   * errors as send(). A kept-alive connection the server closed while idle fails at once with ECONNRESET; that
   * attempt is repeated once on a fresh connection (imports are idempotent: the store deduplicates samples).
   */
  private async post(path: string, pieces: readonly ImportPiece[], bytes: number, contentType: string): Promise<void> {
    const url = new URL(this.base + path);
    const attempt = (fresh: boolean): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        const fail = (reason: string, status = 0, text = ''): void => reject(new TsdbError(`tsdb ${path}: ${reason}`, status, text));
        const req = (url.protocol === 'https:' ? https : http).request(url, {
          method: 'POST',
          // The repeat after a stale connection opens one of its own: the pool may hold more the store has closed.
          agent: fresh ? false : this.agentFor(url.protocol),
          headers: { 'content-type': contentType, 'content-length': bytes, 'accept-encoding': 'identity', ...(this.authorization ? { authorization: this.authorization } : {}) },
        });
        const timer = setTimeout(() => req.destroy(new TimeoutReached()), this.timeoutMs);
        req.on('error', (err: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          if (err instanceof TimeoutReached) fail(`timed out after ${this.timeoutMs}ms`);
          else if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) reject(new StaleConnection());
          else fail(err.message);
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => {
            clearTimeout(timer);
            fail(err.message);
          });
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            // The timeout stays armed until then: a body that never finishes going out still ends the import.
            const settle = (): void => {
              clearTimeout(timer);
              if (status >= 200 && status < 300) return resolve();
              const text = Buffer.concat(chunks).toString('utf8');
              fail(`HTTP ${status}: ${text.slice(0, 500)}`, status, text);
            };
            // Settles only once no byte of the body is being sent any more, so the caller may reuse its memory. The
            // write's completion can be reported after the answer it led to: wait for it (the connection stays
            // usable). An answer before the whole body went out (a refusal mid-body) stops the sending instead.
            if (req.writableFinished) return settle();
            if (status >= 200 && status < 300) {
              req.once('finish', settle);
              req.once('close', settle);
              return;
            }
            req.destroy();
            settle();
          });
        });
        // Written before the socket is assigned: the request keeps them and flushes them with its head in one writev.
        for (const p of pieces) req.write(p);
        req.end();
      });
    try {
      await attempt(false);
    } catch (err) {
      if (!(err instanceof StaleConnection)) throw err;
      await attempt(true).catch((again: unknown) => {
        throw again instanceof StaleConnection ? new TsdbError(`tsdb ${path}: connection reset`, 0, '') : again;
      });
    }
  }

  private agentFor(protocol: string): http.Agent {
    if (protocol === 'https:') return (this.httpsAgent ??= new https.Agent({ keepAlive: true }));
    return (this.httpAgent ??= new http.Agent({ keepAlive: true }));
  }

  /** Every call ends here: timeout, and a non-2xx answer becomes a TsdbError carrying the server's text. */
  private async send(path: string, init: Omit<RequestInit, 'headers'> & { signal?: AbortSignal; headers?: Record<string, string> }, timeoutMs = this.timeoutMs): Promise<Response> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res: Response;
    try {
      // Answers uncompressed: the store sits beside this process (same host or network), where gzip costs CPU on both
      // ends (it was a visible part of a chart's) to save bandwidth nobody is short of.
      res = await fetch(this.base + path, { ...init, headers: { 'accept-encoding': 'identity', ...(this.authorization ? { authorization: this.authorization } : {}), ...init.headers }, signal });
    } catch (err) {
      // The caller's deadline passing is a timeout too, whichever of the two fired first (a 504, never "unavailable").
      const reason = timeout.aborted
        ? `timed out after ${timeoutMs}ms`
        : init.signal?.aborted
          ? 'timed out: the request deadline passed'
          : err instanceof Error
            ? err.message
            : String(err);
      throw new TsdbError(`tsdb ${path.split('?')[0]}: ${reason}`, 0, '');
    }
    if (!res.ok) {
      const body = await res.text().catch(() => '');
      throw new TsdbError(`tsdb ${path.split('?')[0]}: HTTP ${res.status}: ${body.slice(0, 500)}`, res.status, body);
    }
    return res;
  }
}

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

/** The request ran past the store's timeout (destroys the request; reported as a TsdbError). */
class TimeoutReached extends Error {}
/** A kept-alive connection the server had closed: the request never reached it, so it is sent again once. */
class StaleConnection extends Error {}
