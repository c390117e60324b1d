// The `web` part of the bench (`npm run bench -- web`): the web console in headless Chromium against the single-process
// system, read from the User Timing marks the console sets (web/src/ui/timing.ts) and the page's resource timings:
// - the first page's JavaScript (gzip), and the sign-in page's time to interactive;
// - the hosts table over 10,000 hosts: its first rows after the search's response, and its frames while scrolling;
// - a host's four charts over 24 hours (hourly buckets, the finest the chart route gives for that range) and over
//   6 hours (1-minute buckets), each from its series' response to its first draw.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../test/support/chromium.ts';
import { generateSync } from 'otplib';
import { Tsdb, type ImportSeries } from '../actors/fleet/metrics/tsdb.ts';
import { tsdbBases, type Config } from '../platform/config.ts';
import type { Stores } from '../platform/stores/index.ts';
import { freshBenchClient } from './fixtures.ts';
import { percentile } from './stats.ts';

const HOSTS = Math.max(100, Number(process.env.BENCH_WEB_HOSTS ?? 10_000));
const SAMPLES = Math.max(3, Number(process.env.BENCH_WEB_SAMPLES ?? 10));
const TARGET = { firstPageJsGzipKb: 200, hostsFirstRowsMs: 300, chartMs: 100 };

export interface WebBenchDeps {
  config: Config;
  stores: Stores;
  /** Starts (once) the single-process system and resolves when its gateway answers. */
  ensureSystem: () => Promise<unknown>;
  gatewayPort: number;
  /** The bench's super admin, with its TOTP secret. */
  user: { email: string; password: string; mfaSecret: string };
}

/** Times in ms over the samples. */
export interface Timing {
  p50: number;
  p95: number;
  min: number;
  max: number;
  samples: number;
}

export interface WebFigures {
  firstPageJsGzipKb: number;
  signInInteractive: Timing;
  hosts: number;
  hostsFirstRows: Timing;
  scroll: { frames: number; p50: number; p99: number; max: number; dropped: number };
  chart24h: Timing & { points: number };
  chart6h: Timing & { points: number };
}

const timing = (values: number[]): Timing => {
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), min: s[0]!, max: s[s.length - 1]!, samples: s.length };
};

/** The mark's time (page clock), waiting for it. */
async function markAt(page: Page, name: string): Promise<number> {
  const handle = await page.waitForFunction((n) => performance.getEntriesByName(n, 'mark')[0]?.startTime, name, {
    timeout: 60_000,
    polling: 50,
  });
  return (await handle.jsonValue()) as number;
}

/** When the last response whose URL contains every one of `parts` ended (page clock). */
async function responseEnd(page: Page, parts: string[]): Promise<number> {
  const end = await page.evaluate(
    (ps) =>
      performance
        .getEntriesByType('resource')
        .filter((e) => ps.every((p) => e.name.includes(p)))
        .map((e) => (e as PerformanceResourceTiming).responseEnd)
        .sort((a, b) => b - a)[0],
    parts,
  );
  if (end === undefined) throw new Error(`no response matching ${parts.join(' ')}`);
  return end;
}

/** 10,000 hosts of a client of their own, tagged so that one search finds exactly them, and one with 24 h of samples. */
async function seed(deps: WebBenchDeps): Promise<{ chartHost: string; tag: string; cleanup: () => Promise<void> }> {
  const orm = await deps.stores.orm();
  const conn = orm.em.fork().getConnection();
  const { clientId, envId } = await freshBenchClient(conn, 'bench-web', 'Bench web');
  const tag = `web-${Date.now().toString(36)}`;
  await conn.execute(
    `INSERT INTO hosts (id, environment_id, client_id, hostname, ip_address, os, os_version, arch, cpu_cores, agent_status, last_seen_at, tags, labels)
     SELECT gen_random_uuid(), ?, ?, 'web-' || lpad(g::text, 5, '0'), '10.9.' || (g / 256) || '.' || (g % 256), 'linux', '24.04', 'amd64', 4,
            CASE WHEN g % 10 = 0 THEN 'offline' ELSE 'online' END, now(), jsonb_build_object('bench', ?, 'team', 'team-' || g % 12),
            jsonb_build_object('region', 'eu-west-1')
       FROM generate_series(1, ?) AS g`,
    [envId, clientId, tag, HOSTS],
  );
  const chartHost = randomUUID();
  await conn.execute(
    `INSERT INTO hosts (id, environment_id, client_id, hostname, agent_status, last_seen_at) VALUES (?, ?, ?, 'web-chart', 'online', now())`,
    [chartHost, envId, clientId],
  );
  const tsdb = new Tsdb(tsdbBases(deps.config), { timeoutMs: 60_000 });
  const from = Date.now() - 24 * 3_600_000;
  const timestamps = Array.from({ length: 8_640 }, (_, i) => from + i * 10_000);
  const tenant = { host_id: chartHost, environment_id: envId, client_id: clientId };
  const series = (name: string, labels: Record<string, string>, value: (i: number) => number): ImportSeries => ({
    metric: { __name__: name, ...labels, ...tenant },
    values: timestamps.map((_, i) => Math.round(value(i) * 100) / 100),
    timestamps,
  });
  await tsdb.importSeries([
    series('cpu_usage_percent', {}, (i) => 50 + 40 * Math.sin(i / 90)),
    series('memory_usage_percent', {}, (i) => 60 + 10 * Math.sin(i / 400)),
    series('filesystem_usage_percent', { mountpoint: '/' }, (i) => 40 + i / 1000),
    series('network_receive_bytes_total', { interface: 'eth0' }, (i) => i * 125_000),
  ]);
  await tsdb.flush();
  return {
    chartHost,
    tag,
    cleanup: async () => {
      await tsdb.deleteSeries([`{host_id="${chartHost}"}`]).catch(() => undefined);
      await conn.execute(`DELETE FROM clients WHERE id = ?`, [clientId]);
    },
  };
}

/** Signs the bench's super admin in through the sign-in page (password, then a TOTP code). */
async function signIn(page: Page, base: string, user: WebBenchDeps['user']): Promise<void> {
  await page.goto(`${base}/sign-in`);
  await page.getByLabel('E-mail').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel(/Code from your authenticator app/).fill(generateSync({ secret: user.mfaSecret }));
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: 30_000 });
}

/** Frame intervals while the hosts table scrolls 40 px per frame for 3 s. */
async function scrollFrames(page: Page): Promise<number[]> {
  return page.evaluate(
    () =>
      new Promise<number[]>((resolve) => {
        const el = document.querySelector('[data-testid="hosts-scroller"]')!;
        const gaps: number[] = [];
        let last = performance.now();
        const stop = last + 3_000;
        const frame = (t: number): void => {
          gaps.push(t - last);
          last = t;
          el.scrollTop += 40;
          if (t < stop) requestAnimationFrame(frame);
          else resolve(gaps.slice(1));
        };
        requestAnimationFrame(frame);
      }),
  );
}

export async function webBench(deps: WebBenchDeps): Promise<WebFigures> {
  await deps.ensureSystem();
  const base = `http://127.0.0.1:${deps.gatewayPort}`;
  const seeded = await seed(deps);
  const browser = await launchBrowser();
  try {
    // The sign-in page, cold: a fresh context each time (no cache), interactive when its form is rendered and the
    // main thread has no long task left.
    const interactive: number[] = [];
    let jsGzipBytes = 0;
    for (let i = 0; i < SAMPLES; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.addInitScript(() => {
        const w = window as unknown as { longTaskEnd: number };
        w.longTaskEnd = 0;
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) w.longTaskEnd = Math.max(w.longTaskEnd, e.startTime + e.duration);
        }).observe({ type: 'longtask', buffered: true });
      });
      const scripts: Promise<number>[] = [];
      page.on('response', (r) => {
        if (r.request().resourceType() === 'script') scripts.push(r.body().then((b) => gzipSync(b).length));
      });
      await page.goto(`${base}/sign-in`);
      const ready = await markAt(page, 'console:sign-in-ready');
      await page.waitForTimeout(500);
      const longTaskEnd = await page.evaluate(() => (window as unknown as { longTaskEnd: number }).longTaskEnd);
      interactive.push(Math.max(ready, longTaskEnd));
      if (i === 0) jsGzipBytes = (await Promise.all(scripts)).reduce((a, b) => a + b, 0);
      await context.close();
    }

    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await signIn(page, base, deps.user);

    // The hosts table: each sample a fresh load of the search (the refresh cookie signs the page in again).
    const firstRows: number[] = [];
    const q = `tag.bench = "${seeded.tag}"`;
    const hostsUrl = `${base}/hosts?${new URLSearchParams({ q })}`;
    for (let i = 0; i < SAMPLES; i++) {
      await page.goto(hostsUrl);
      const shown = await markAt(page, 'console:hosts-rows');
      firstRows.push(shown - (await responseEnd(page, ['/api/v1/search', 'page=1'])));
    }
    await page.getByText(`${HOSTS} hosts`).waitFor({ timeout: 30_000 });
    const gaps = (await scrollFrames(page)).sort((a, b) => a - b);
    const frame = percentile(gaps, 50);

    // A host's four charts: 24 h, then 6 h, each a fresh load of the page.
    const chart = async (range: '24h' | '6h', ms: number): Promise<Timing & { points: number }> => {
      const times: number[] = [];
      let points = 0;
      for (let i = 0; i < SAMPLES; i++) {
        await page.goto(`${base}/hosts/${seeded.chartHost}`);
        await page.getByRole('button', { name: range, exact: true }).click();
        let worst = 0;
        for (const metric of [
          'cpu_usage_percent',
          'memory_usage_percent',
          'filesystem_usage_percent',
          'network_receive_bytes_total',
        ]) {
          const name = `console:chart:${metric}:${ms}`;
          const drawn = await markAt(page, name).catch(async (err: unknown) => {
            await page.screenshot({ path: 'data/bench-web-chart-failure.png', fullPage: true });
            throw err;
          });
          worst = Math.max(worst, drawn - (await responseEnd(page, [`/metrics/${metric}?`])));
          points = await page.evaluate(
            (n) => (performance.getEntriesByName(n, 'mark')[0] as PerformanceMark).detail.points as number,
            name,
          );
        }
        times.push(worst);
      }
      return { ...timing(times), points };
    };
    const chart24h = await chart('24h', 86_400_000);
    const chart6h = await chart('6h', 21_600_000);
    await context.close();

    const figures: WebFigures = {
      firstPageJsGzipKb: jsGzipBytes / 1000,
      signInInteractive: timing(interactive),
      hosts: HOSTS,
      hostsFirstRows: timing(firstRows),
      scroll: {
        frames: gaps.length,
        p50: frame,
        p99: percentile(gaps, 99),
        max: gaps[gaps.length - 1]!,
        dropped: gaps.filter((g) => g > frame * 1.5).length,
      },
      chart24h,
      chart6h,
    };
    report(figures);
    return figures;
  } finally {
    await browser.close();
    await seeded.cleanup();
  }
}

function report(f: WebFigures): void {
  const t = (x: Timing): string =>
    `p50 ${x.p50.toFixed(1)} ms, p95 ${x.p95.toFixed(1)} ms (${x.min.toFixed(1)}–${x.max.toFixed(1)}, ${x.samples} loads)`;
  console.log(
    [
      `\n## web console (headless Chromium)`,
      `first page's JavaScript: ${f.firstPageJsGzipKb.toFixed(1)} kB gzip (target ≤ ${TARGET.firstPageJsGzipKb})`,
      `sign-in page interactive after navigation: ${t(f.signInInteractive)}`,
      `hosts table, ${f.hosts} hosts: first rows after the search's response ${t(f.hostsFirstRows)} (target ≤ ${TARGET.hostsFirstRowsMs})`,
      `scrolling it 40 px a frame for 3 s: ${f.scroll.frames} frames, interval p50 ${f.scroll.p50.toFixed(1)} ms, p99 ${f.scroll.p99.toFixed(1)} ms, max ${f.scroll.max.toFixed(1)} ms, ${f.scroll.dropped} longer than 1.5 × p50`,
      `host charts, 4 series over 24 h (${f.chart24h.points} hourly points each), slowest of the four from response to drawn: ${t(f.chart24h)} (target ≤ ${TARGET.chartMs})`,
      `the same over 6 h (${f.chart6h.points} one-minute points each): ${t(f.chart6h)}`,
    ].join('\n'),
  );
}
