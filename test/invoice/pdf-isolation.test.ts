import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finalize } from '../../actors/invoice/lifecycle/finalize.ts';
import { PdfRenderer } from '../../actors/invoice/pdf/browser.ts';
import { createLogger } from '../../platform/logger.ts';
import { pdfText } from './pdf-text.ts';
import { data, expectStatus, useInvoiceFixture, type Json } from './support.ts';

/**
 * What one invoice's HTML can do to the renderer shared by every tenant of the process: html_overrides that frame,
 * navigate away and fetch, finalized through the API against the real Chromium.
 */
// Three renders at once queue for two contexts on a shared, loaded machine: the default 10 s could answer one 504.
const t = useInvoiceFixture({ SVC_REQUEST_TIMEOUT_MS: '60000' });
const call = t.call;

interface Inv extends Json {
  id: string;
  display_number: string;
}

async function draft(override?: string): Promise<Inv> {
  const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: t.fx.keys.ret }));
  const res = await call('POST', '/api/v1/invoices/generate', preview);
  expectStatus(res, 201);
  const inv = data<Inv>(res);
  if (override !== undefined)
    expectStatus(await call('PATCH', `/api/v1/invoices/${inv.id}`, { html_override: override }), 200);
  return inv;
}
/** An 8×8 red PNG, inline. */
const LOGO =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGO4oKCAFTEMLQkAvk5EAfjoixEAAAAASUVORK5CYII=';
const squash = (s: string): string => s.replace(/\s+/g, '');
const pdfOf = async (id: string): Promise<Buffer> => {
  const res = await call('GET', `/api/v1/invoices/${id}/pdf`);
  expectStatus(res, 200);
  return res.rawPayload;
};

/** A loopback HTTP server that counts what reaches it: requests, and connections that never sent one. */
let server: Server;
let base: string;
const seen = { requests: [] as string[], connections: 0 };
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.requests.push(req.url ?? '');
    res.setHeader('content-type', 'text/html');
    res.end('<h1>LOOPBACK SECRET</h1>');
  });
  server.on('connection', () => seen.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  // Connections a failing run let in are kept alive by Chromium: closed with the server.
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('PDF rendering of one invoice cannot reach another', () => {
  it('an html_override with data: and srcdoc iframes finalizes, and the finalizes beside it succeed', async () => {
    const frames = Array.from(
      { length: 4 },
      (_, i) =>
        `<iframe src="data:text/html,<h2>data frame ${i}</h2>"></iframe>` +
        `<iframe srcdoc="<h2>srcdoc frame ${i}</h2><iframe srcdoc='<p>nested ${i}</p>'></iframe>"></iframe>` +
        `<object data="data:text/html,<p>object ${i}</p>"></object><embed src="data:text/html,<p>embed ${i}</p>">`,
    ).join('');
    const override = `<html><body><h1>Framed invoice FR-1</h1>${frames}</body></html>`;
    // A few rounds: one crash of the browser used to fail every render in flight, the others' included.
    for (let round = 0; round < 3; round++) {
      const framed = await draft(override);
      const others = [await draft(), await draft()];
      const results = await Promise.all(
        [framed, ...others].map((inv) => call('POST', `/api/v1/invoices/${inv.id}/finalize`)),
      );
      expect(results.map((r) => `${r.statusCode} ${r.statusCode === 200 ? '' : r.body}`)).toEqual([
        '200 ',
        '200 ',
        '200 ',
      ]);
      const text = squash(pdfText(await pdfOf(framed.id)).text);
      expect(text).toContain('FramedinvoiceFR-1');
      // Frames are refused: none of their documents is printed.
      expect(text).not.toMatch(/dataframe|srcdocframe|nested|object\d|embed\d/);
      for (const inv of others) expect(squash(pdfText(await pdfOf(inv.id)).text)).toContain(squash(inv.display_number));
    }
  }, 120_000);

  it('a <meta http-equiv=refresh> to a loopback URL neither leaves its page nor touches the next invoice', async () => {
    seen.requests.length = 0;
    seen.connections = 0;
    // The sibling first, so a reused page (two in the pool) would carry the refresh into its next render.
    const refreshing = await draft(
      `<html><head><meta http-equiv="refresh" content="0;url=${base}/refresh"></head>` +
        `<body><h1>Refreshing invoice RF-1</h1><p>${'padding '.repeat(200)}</p></body></html>`,
    );
    const next = await draft();
    const reference = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${reference.id}/finalize`), 200);
    const expected = pdfText(await pdfOf(reference.id));

    expectStatus(await call('POST', `/api/v1/invoices/${refreshing.id}/finalize`), 200);
    expect(squash(pdfText(await pdfOf(refreshing.id)).text)).toContain('RefreshinginvoiceRF-1');
    // Time for a refresh timer to fire on a page kept after the render.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expectStatus(await call('POST', `/api/v1/invoices/${next.id}/finalize`), 200);
    const got = pdfText(await pdfOf(next.id));
    expect(got.pages).toBe(expected.pages);
    // The same template with another number: the same text once the numbers are taken out.
    const strip = (s: string, n: string): string => squash(s).split(squash(n)).join('#');
    expect(strip(got.text, next.display_number)).toBe(strip(expected.text, reference.display_number));
    expect(seen).toEqual({ requests: [], connections: 0 });
  }, 60_000);

  it('no sub-request of an html_override reaches a loopback HTTP server, not even a connection', async () => {
    seen.requests.length = 0;
    seen.connections = 0;
    const override =
      `<html><head><link rel="stylesheet" href="${base}/css"><link rel="preconnect" href="${base}">` +
      `<link rel="dns-prefetch" href="${base}"><link rel="prefetch" href="${base}/prefetch">` +
      `<link rel="preload" as="image" href="${base}/preload"><link rel="icon" href="${base}/icon">` +
      `<style>@import url(${base}/import); body { background: url(${base}/bg) }` +
      ` @font-face { font-family: x; src: url(${base}/font) } h1 { font-family: x }</style></head>` +
      `<body><h1>Fetching invoice FE-1</h1><img src="${LOGO}" width="80" height="80"><img src="${base}/img"><img srcset="${base}/srcset 2x">` +
      `<svg><image href="${base}/svg"/></svg><video src="${base}/video" poster="${base}/poster"></video>` +
      `<audio src="${base}/audio" autoplay></audio><input type="image" src="${base}/input">` +
      `<iframe src="${base}/iframe"></iframe><object data="${base}/object"></object><embed src="${base}/embed">` +
      `<a href="${base}/a" ping="${base}/ping">link</a><form action="${base}/form"></form></body></html>`;
    const inv = await draft(override);
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    const pdf = await pdfOf(inv.id);
    expect(squash(pdfText(pdf).text)).toContain('FetchinginvoiceFE-1');
    // What needs no network still prints: the inline (data:) logo is in the PDF.
    expect(pdf.toString('latin1')).toMatch(/\/Subtype\s*\/Image/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual({ requests: [], connections: 0 });
  }, 60_000);

  it('finalize answers 400 naming the HTML when its page crashes on both tries, 503 when the browser dies twice; the invoice stays a draft', async () => {
    const crashPage = async (page: Page): Promise<void> => {
      // Chromium's own crash of the page's renderer process; the reply never comes.
      void (await page.createCDPSession()).send('Page.crash').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    };
    const killBrowser = async (page: Page): Promise<void> => {
      page.browser().process()?.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    };
    const log = createLogger('silent');
    const seller = { name: 'Seller', address: 'Street 1', email: 'billing@example.com', vat_id: '' };
    for (const [beforePrint, code, message] of [
      [crashPage, 'bad_request', "the invoice's HTML could not be printed: its page crashed on each try"],
      [killBrowser, 'unavailable', 'the PDF renderer stopped during the render; retry'],
    ] as const) {
      const inv = await draft();
      const renderer = new PdfRenderer({
        executablePath: process.env.SVC_CHROMIUM_PATH ?? '/usr/bin/chromium',
        pages: 1,
        log,
        beforePrint,
      });
      try {
        const orm = await t.sys.stores.orm();
        const err: unknown = await orm.em
          .fork()
          .transactional((tx) =>
            finalize(tx, inv.id, {
              renderer,
              seller,
              log,
              editor: 'test',
              nc: t.sys.nc,
              clock: t.sys.clock,
              timeoutMs: 25_000,
            }),
          )
          .catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'DomainError', code, message });
      } finally {
        await renderer.close();
      }
      expect(data(await call('GET', `/api/v1/invoices/${inv.id}`))).toMatchObject({ status: 'draft', version: 1 });
      expectStatus(await call('GET', `/api/v1/invoices/${inv.id}/pdf`), 404);
    }
  }, 90_000);
});
