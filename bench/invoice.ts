// The `invoice` part of the bench: finalize with its PDF against a bare puppeteer render of the same HTML, the HTML
// preview of a large invoice, and generate-bulk for 1,000 applications. Everything goes through the invoicing gateway
// over HTTP, against a system the bench starts with its own analytics store, fed through the real ingest subject.
import type { ChildProcess } from 'node:child_process';
import { bareBrowser } from './browser.ts';
import { rm } from 'node:fs/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { AnalyticsBatchIn } from '../contracts/domains/invoice-ingest.ts';
import { INGEST_SUBJECT } from '../actors/invoice/analytics/ingest.ts';
import { sellerOf } from '../actors/invoice/documents/handlers.ts';
import { loadRenderable } from '../actors/invoice/invoices/store.ts';
import { renderInvoiceHtml } from '../actors/invoice/render/template.ts';
import type { Config } from '../platform/config.ts';
import { publishDurable } from '../platform/jetstream.ts';
import { namespace } from '../platform/namespace.ts';
import type { Stores } from '../platform/stores/index.ts';
import { waitForIngest } from '../scripts/seed/seed-demo.ts';
import { load, type LoadResult } from './load.ts';
import { figures, fmt, pathTable, percentile, spread, type PathFigures, type Spread } from './stats.ts';

export const INVOICING_PORT = 18082;
/** chDB directory of the bench's own system (the process running the invoice domain owns it). */
export const ANALYTICS_PATH = 'data/analytics-bench';
/** Finalize/bare pairs per round; p95 of 30 samples is the second slowest. */
const FINALIZES = Math.max(10, Number(process.env.BENCH_INVOICE_FINALIZES ?? 30));
const PREVIEWS = Math.max(100, Number(process.env.BENCH_INVOICE_PREVIEWS ?? 500));
const BULK_APPS = 1_000;
const WORKLOGS_PER_APP = 40;
const PERIOD = { period_start: '2026-10-01', period_end: '2026-10-31' } as const;
const PDF_APP = 'BENCH-PDF-100';
const PREVIEW_APP = 'BENCH-PREVIEW-200';
const BULK_PREFIX = 'BENCH-A-';

export interface InvoiceBenchDeps {
  config: Config;
  stores: Stores;
  nc: NatsConnection;
  token: string;
  rounds: number;
  seconds: number;
  /** run.ts's startChild: the child is stopped with the bench. */
  start: (args: string[], env: Record<string, string>, readyUrl: string) => Promise<ChildProcess>;
  env: Record<string, string>;
}

export interface InvoiceFigures {
  via: string;
  finalize: { lines: number; perRound: number; p50: Spread; p95: Spread; pdfBytes: number };
  bare: { p50: Spread; p95: Spread; pdfBytes: number };
  p50Ratio: Spread;
  p95Ratio: Spread;
  preview: { lines: number; perRound: number; htmlBytes: number; p50: Spread; p99: Spread; load: PathFigures };
  bulk: { applications: number; worklogs: number; seconds: Spread; repeatSeconds: Spread };
  ingest: { batches: number; records: number; seconds: number };
}

const pad = (n: number, w: number): string => String(n).padStart(w, '0');
const TASKS = [
  'Fix checkout rounding',
  'Upgrade framework',
  'Add SSO login',
  'Improve search ranking',
  'Nightly export job',
  'Accessibility review',
  'Refactor billing module',
  'Performance tuning',
];
const TIERS = [
  { rate_tier: 'bench-standard', name: 'Standard hours', multiplier: '1.0000' },
  { rate_tier: 'bench-after-hours', name: 'After hours', multiplier: '1.5000' },
  { rate_tier: 'bench-urgent', name: 'Urgent response', multiplier: '1.2500' },
];

/**
 * The bench's analytics data, deterministic (stable ids, so a second run replaces rows): 1,000 active applications
 * (RET/TM/FIX, 4 currencies) with 40 October worklogs each over 8 tracker keys, and two inactive TM applications
 * (bulk skips inactive ones) whose worklogs give exactly 100 and 200 task lines: one tracker key, one tier each.
 */
function benchData(): { records: number; batches: AnalyticsBatchIn[] } {
  const customers = Array.from({ length: 20 }, (_, i) => ({
    customer_key: `BENCH-CUST-${pad(i + 1, 2)}`,
    name: `Bench Customer ${i + 1} GmbH`,
    email: `billing-${i + 1}@bench.example`,
    address: `Hafenstraße ${i + 1}, 20457 Hamburg`,
    country: 'DE',
    vat_id: `DE${pad(100000000 + i, 9)}`,
  }));
  const deals = ['RET', 'TM', 'FIX'] as const;
  const currencies = ['EUR', 'GBP', 'USD', 'CHF'] as const;
  const app = (key: string, i: number, active: boolean, deal: (typeof deals)[number]) => ({
    application_key: key,
    customer_key: customers[i % customers.length]!.customer_key,
    name: `Bench application ${key}`,
    is_active: active,
    deal_type: deal,
    currency: currencies[i % currencies.length]!,
    base_amount: deal === 'TM' ? '0.00' : '2500.00',
    included_hours: deal === 'RET' ? '20.0000' : '0',
    hourly_rate: '95.00',
    overtime_rate: deal === 'RET' ? '120.00' : '0',
  });
  const applications = [
    ...Array.from({ length: BULK_APPS }, (_, i) =>
      app(`${BULK_PREFIX}${pad(i + 1, 4)}`, i, true, deals[i % deals.length]!),
    ),
    app(PDF_APP, 0, false, 'TM'),
    app(PREVIEW_APP, 1, false, 'TM'),
  ];
  const worklog = (
    application_key: string,
    n: number,
    tracker: string,
    tier: string,
    day: number,
    seconds: number,
  ) => ({
    worklog_id: `bench-wl-${application_key}-${n}`,
    application_key,
    tracker_key: tracker,
    linked_issue_key: `${tracker}-L`,
    description: `${TASKS[n % TASKS.length]!}: analysis, change and review (${tracker})`,
    author: `dev${n % 7}`,
    worklog_date: `2026-10-${pad(1 + (day % 31), 2)}`,
    time_seconds: seconds,
    billable_seconds: seconds,
    rate_tier: tier,
  });
  const worklogs: ReturnType<typeof worklog>[] = [];
  for (let a = 0; a < BULK_APPS; a++) {
    const key = `${BULK_PREFIX}${pad(a + 1, 4)}`;
    for (let n = 0; n < WORKLOGS_PER_APP; n++)
      worklogs.push(
        worklog(key, n, `B${a}-${n % 8}`, TIERS[n % TIERS.length]!.rate_tier, n, 900 + ((a * 37 + n * 113) % 20_000)),
      );
  }
  for (const [key, lines] of [
    [PDF_APP, 100],
    [PREVIEW_APP, 200],
  ] as const)
    for (let n = 0; n < lines; n++)
      worklogs.push(worklog(key, n, `T-${pad(n + 1, 3)}`, TIERS[0]!.rate_tier, n, 1800 + n * 60));
  const batches: AnalyticsBatchIn[] = [
    { batch_id: 'bench-master-0', customers, rate_tiers: TIERS, applications: applications.slice(0, 1_000) },
  ];
  batches.push({ batch_id: 'bench-master-1', applications: applications.slice(1_000) });
  for (let i = 0; i < worklogs.length; i += 2_000)
    batches.push({ batch_id: `bench-worklogs-${i / 2_000}`, worklogs: worklogs.slice(i, i + 2_000) });
  return { records: customers.length + TIERS.length + applications.length + worklogs.length, batches };
}

export async function invoiceBench(deps: InvoiceBenchDeps): Promise<InvoiceFigures> {
  const base = `http://127.0.0.1:${INVOICING_PORT}`;
  // A fresh store every run, so every run reads the same data: ReplacingMergeTree keeps each re-ingested copy until a
  // background merge, and reads with FINAL would dedupe more rows run after run. The bench owns this directory.
  await rm(ANALYTICS_PATH, { recursive: true, force: true });
  // The system under test: identity (token checks) and invoice on one event loop, the invoicing gateway only.
  await deps.start(
    ['main.ts'],
    {
      ...deps.env,
      SVC_ACTORS: 'identity,invoice',
      SVC_GATEWAYS: 'invoicing',
      SVC_INVOICING_PORT: String(INVOICING_PORT),
      SVC_ANALYTICS_PATH: ANALYTICS_PATH,
    },
    `${base}/readyz`,
  );
  const auth = { authorization: `Bearer ${deps.token}` };
  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown, expect = 200): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (res.status !== expect)
      throw new Error(`${method} ${path}: expected ${expect}, got ${res.status}: ${text.slice(0, 300)}`);
    return (JSON.parse(text) as { data: T }).data;
  };

  // Data through the ingest path other systems use (the bench never opens chDB: the invoice process holds it).
  const nc = deps.nc;
  const data = benchData();
  const t0 = performance.now();
  // A run id in the msg id: the store is fresh, so a batch of an earlier run within the stream's dedup window must be
  // stored again, not dropped as a duplicate publish.
  const run = Date.now().toString(36);
  for (let i = 0; i < data.batches.length; i += 8)
    await Promise.all(
      data.batches
        .slice(i, i + 8)
        .map((b) =>
          publishDurable(nc, INGEST_SUBJECT, b, { msgId: `${namespace()}:${b.batch_id}:${run}`, timeoutMs: 30_000 }),
        ),
    );
  await waitForIngest(nc, 300_000);
  const ingest = { batches: data.batches.length, records: data.records, seconds: (performance.now() - t0) / 1000 };
  console.log(
    `\n## invoice: ${data.batches.length} batches (${data.records} records) ingested through ${INGEST_SUBJECT} in ${ingest.seconds.toFixed(1)} s`,
  );

  // Invoices of earlier bench runs go: bulk must create 1,000 drafts, and the bench database must not grow run by run.
  const em = (await deps.stores.orm()).em.fork();
  // Autovacuum is off on this machine's PostgreSQL: without a VACUUM the deleted rows (300k line items after three
  // runs) stay behind and slow every later round; with it each round starts from the same tables.
  const vacuum = (): Promise<unknown> =>
    em
      .fork()
      .execute(`VACUUM (ANALYZE) invoices, invoice_line_items, invoice_edit_history, invoice_pdfs, invoice_counters`);
  await em.execute(`DELETE FROM invoices WHERE application_key LIKE 'BENCH-%'`);
  await vacuum();

  const generate = async (app: string, lines: number): Promise<string> => {
    const preview = await call<{ line_items: unknown[] }>('POST', '/api/v1/invoices/prefill', {
      application_key: app,
      ...PERIOD,
    });
    if (preview.line_items.length !== lines)
      throw new Error(`${app}: expected ${lines} lines, the prefill has ${preview.line_items.length}`);
    return (await call<{ id: string }>('POST', '/api/v1/invoices/generate', preview, 201)).id;
  };

  // ---- finalize vs bare render ----
  const bare = await bareBrowser(deps.config.SVC_CHROMIUM_PATH);
  let barePdfBytes = 0;
  const renderBare = async (html: string): Promise<number> => {
    const t = performance.now();
    await bare.page.setContent(html, { waitUntil: 'load', timeout: 30_000 });
    const pdf = await bare.page.pdf({ format: 'A4', printBackground: true, preferCSSPageSize: true, timeout: 30_000 });
    const ms = performance.now() - t;
    barePdfBytes = pdf.length;
    return ms;
  };
  const finalizeOnce = async (id: string): Promise<number> => {
    const t = performance.now();
    const inv = await call<{ status: string }>('POST', `/api/v1/invoices/${id}/finalize`);
    const ms = performance.now() - t;
    if (inv.status !== 'needs_review') throw new Error(`finalize gave ${inv.status}`);
    return ms;
  };
  /** n drafts with their HTML as finalize prints it (the needs_review state: no Draft mark), made before the timing. */
  const drafts = async (n: number): Promise<{ id: string; html: string }[]> => {
    const out: { id: string; html: string }[] = [];
    for (let i = 0; i < n; i++) {
      const id = await generate(PDF_APP, 100);
      const doc = await loadRenderable(em.fork(), id);
      out.push({
        id,
        html: renderInvoiceHtml({ ...doc, invoice: { ...doc.invoice, status: 'needs_review' } }, sellerOf(deps.config)),
      });
    }
    return out;
  };
  /** Pairs back to back, the order alternating, so neither path always runs right after the other. */
  const pairs = async (ds: { id: string; html: string }[]): Promise<{ fin: number[]; bare: number[] }> => {
    const fin: number[] = [];
    const bareMs: number[] = [];
    for (const [i, d] of ds.entries()) {
      if (i % 2 === 0) {
        fin.push(await finalizeOnce(d.id));
        bareMs.push(await renderBare(d.html));
      } else {
        bareMs.push(await renderBare(d.html));
        fin.push(await finalizeOnce(d.id));
      }
    }
    return { fin: fin.sort((a, b) => a - b), bare: bareMs.sort((a, b) => a - b) };
  };
  let finRounds: { fin: number[]; bare: number[] }[] = [];
  let pdfBytes = 0;
  try {
    // Warm-up (not counted): the system's browser starts on its first finalize, the bench's is warmed the same way.
    await pairs(await drafts(5));
    for (let r = 0; r < deps.rounds; r++) finRounds.push(await pairs(await drafts(FINALIZES)));
    const [stored] = await em
      .fork()
      .execute<{ byte_size: string }[]>(
        `SELECT p.byte_size::text AS byte_size FROM invoice_pdfs p JOIN invoices i ON i.id = p.invoice_id WHERE i.application_key = ? ORDER BY p.created_at DESC LIMIT 1`,
        [PDF_APP],
      );
    pdfBytes = Number(stored?.byte_size ?? 0);
  } finally {
    await bare.close();
  }
  finRounds = finRounds.filter((r) => r.fin.length > 0);
  const at = (xs: number[][], p: number): Spread => spread(xs.map((x) => percentile(x, p)));
  const fin = finRounds.map((r) => r.fin);
  const bareRounds = finRounds.map((r) => r.bare);

  // ---- preview-html of a 200-line invoice ----
  const previewId = await generate(PREVIEW_APP, 200);
  const previewUrl = `${base}/api/v1/invoices/${previewId}/preview-html`;
  let htmlBytes = 0;
  const previews = async (n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const res = await fetch(previewUrl, { headers: auth });
      const html = await res.text();
      out.push(performance.now() - t);
      if (res.status !== 200) throw new Error(`preview-html: ${res.status} ${html.slice(0, 200)}`);
      htmlBytes = Buffer.byteLength(html);
    }
    return out.sort((a, b) => a - b);
  };
  await previews(100);
  const previewRounds: number[][] = [];
  const previewLoad: LoadResult[] = [];
  // Sequential calls (the latency a person sees), then 8 connections at once (what the process sustains), per round.
  await load('preview-html, 8 connections', previewUrl, {
    headers: auth,
    seconds: Math.min(3, deps.seconds),
    connections: 8,
  });
  for (let r = 0; r < deps.rounds; r++) {
    previewRounds.push(await previews(PREVIEWS));
    previewLoad.push(
      await load('GET preview-html (200 lines), 8 connections', previewUrl, {
        headers: auth,
        seconds: deps.seconds,
        connections: 8,
      }),
    );
  }

  // ---- generate-bulk for 1,000 applications ----
  const bulkOnce = async (): Promise<{ ms: number; created: number; skipped: number }> => {
    const t = performance.now();
    const entries = await call<{ skipped: boolean }[]>('POST', '/api/v1/invoices/generate-bulk', PERIOD);
    const ms = performance.now() - t;
    if (entries.length !== BULK_APPS)
      throw new Error(`generate-bulk answered ${entries.length} entries, expected ${BULK_APPS}`);
    const skipped = entries.filter((e) => e.skipped).length;
    return { ms, created: entries.length - skipped, skipped };
  };
  const clearBulk = async (): Promise<void> => {
    await em
      .fork()
      .execute(`DELETE FROM invoices WHERE application_key LIKE ? AND period_start = ? AND period_end = ?`, [
        `${BULK_PREFIX}%`,
        PERIOD.period_start,
        PERIOD.period_end,
      ]);
    await vacuum();
  };
  const bulkMs: number[] = [];
  const repeatMs: number[] = [];
  // Warm-up (not counted), then per round: a fresh run (1,000 created) and the same call again (1,000 skipped).
  await clearBulk();
  await bulkOnce();
  for (let r = 0; r < deps.rounds; r++) {
    await clearBulk();
    const fresh = await bulkOnce();
    if (fresh.created !== BULK_APPS) throw new Error(`generate-bulk created ${fresh.created}, expected ${BULK_APPS}`);
    bulkMs.push(fresh.ms);
    const again = await bulkOnce();
    if (again.skipped !== BULK_APPS)
      throw new Error(`generate-bulk again skipped ${again.skipped}, expected ${BULK_APPS}`);
    repeatMs.push(again.ms);
  }

  const result: InvoiceFigures = {
    via: 'HTTP: invoicing gateway → NATS → invoice actor → PostgreSQL + Chromium',
    finalize: { lines: 100, perRound: FINALIZES, p50: at(fin, 50), p95: at(fin, 95), pdfBytes },
    bare: { p50: at(bareRounds, 50), p95: at(bareRounds, 95), pdfBytes: barePdfBytes },
    p50Ratio: spread(finRounds.map((r) => percentile(r.fin, 50) / percentile(r.bare, 50))),
    p95Ratio: spread(finRounds.map((r) => percentile(r.fin, 95) / percentile(r.bare, 95))),
    preview: {
      lines: 200,
      perRound: PREVIEWS,
      htmlBytes,
      p50: at(previewRounds, 50),
      p99: at(previewRounds, 99),
      load: figures(previewLoad),
    },
    bulk: {
      applications: BULK_APPS,
      worklogs: BULK_APPS * WORKLOGS_PER_APP,
      seconds: spread(bulkMs.map((m) => m / 1000)),
      repeatSeconds: spread(repeatMs.map((m) => m / 1000)),
    },
    ingest,
  };
  console.log(
    `finalize (100 lines, ${result.via}), ${FINALIZES} per round, warm-up + ${deps.rounds} interleaved rounds, ms:`,
  );
  console.log(
    `  finalize  p50 ${fmt(result.finalize.p50, 1)}  p95 ${fmt(result.finalize.p95, 1)} (target ≤ 1000)   PDF ${pdfBytes} bytes`,
  );
  console.log(
    `  bare      p50 ${fmt(result.bare.p50, 1)}  p95 ${fmt(result.bare.p95, 1)}   PDF ${barePdfBytes} bytes (page.setContent + page.pdf, own browser, warm page)`,
  );
  console.log(`  finalize / bare: p50 ${fmt(result.p50Ratio, 2)} (target ≤ 1.50)   p95 ${fmt(result.p95Ratio, 2)}`);
  console.log(
    `preview-html (200 lines, ${htmlBytes} bytes), ${PREVIEWS} sequential calls per round, ms: p50 ${fmt(result.preview.p50, 2)}  p99 ${fmt(result.preview.p99, 2)} (target ≤ 50)`,
  );
  console.log(pathTable([result.preview.load]));
  console.log(
    `generate-bulk, ${BULK_APPS} active applications, ${result.bulk.worklogs} worklogs in the period, s: fresh ${fmt(result.bulk.seconds, 2)} (target ≤ 10)   again, all skipped ${fmt(result.bulk.repeatSeconds, 2)}`,
  );
  return result;
}
