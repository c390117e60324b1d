import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AttemptOutcome } from './retry-policy.ts';
import { checkTargetUrl, pinnedLookup, type UrlPolicy } from './url-guard.ts';

/** The outcome of one POST, how long it took, and a refusal by the URL rules (which no retry changes). */
export type PostResult = AttemptOutcome & { latencyMs: number };
export type Refused = { kind: 'refused'; reason: string; latencyMs: number };

const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * POSTs a JSON body to a notification target: the URL checked against the rules first (https, public addresses) and
 * the connection pinned to the addresses checked; no redirects followed (a 3xx is the target's answer). The answer's
 * body is read up to 64 KiB and dropped.
 */
export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; policy: UrlPolicy },
): Promise<PostResult | Refused> {
  const started = performance.now();
  const latency = (): number => Math.round(performance.now() - started);
  const check = await checkTargetUrl(url, opts.policy);
  if (!check.ok) return { kind: 'refused', reason: check.reason, latencyMs: latency() };
  const target = check.url;
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: PostResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = send(
      target,
      {
        method: 'POST',
        lookup: pinnedLookup(check.addresses),
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'svc-notifications/1',
          ...headers,
        },
      },
      (res) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) res.destroy();
        });
        const finish = (): void =>
          done({
            kind: 'response',
            status: res.statusCode ?? 0,
            retryAfter: typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null,
            latencyMs: latency(),
          });
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      },
    );
    const timer = setTimeout(() => {
      done({ kind: 'timeout', latencyMs: latency() });
      req.destroy();
    }, opts.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) =>
      done({ kind: 'network', message: err.code ?? err.message, latencyMs: latency() }),
    );
    req.end(body);
  });
}
