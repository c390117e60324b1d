import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type BrowserContext, type HTTPRequest, type Page } from 'puppeteer-core';
import { killGroup, killGroupOnExit } from '../../../platform/child-reaper.ts';
import type { Logger } from '../../../platform/logger.ts';

/** Chromium may still be writing its profile while it exits: retried, and never an error of the caller's. */
const removeProfile = (dir: string): Promise<void> =>
  rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() => undefined);

/**
 * Chromium as the PDF renderer runs it: no background services, a profile of its own, and no network at all. Every
 * host name, IP literals and loopback included, resolves to nothing, so even what request interception never sees
 * (the browser's own preconnects to a frame's or a refresh's origin) cannot open a connection.
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  // Each browser context is a window of its own: without this, every one starts Chromium's spare renderer and the
  // omnibox popup's WebUI renderers, which cost more CPU than the print itself (unknown names are ignored).
  '--disable-features=SpareRendererForSitePerProcess,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup',
] as const;

/** Chromium refuses its sandbox to root outright, so there it is not even tried. */
export const runsAsRoot = (): boolean => process.getuid?.() === 0;

/**
 * Where the document is loaded from: the request is answered from memory by the interception and never leaves the
 * browser (`.invalid` cannot resolve anyway). A real navigation, unlike document.write into about:blank, lets the
 * response carry the policy below.
 */
export const CONTENT_URL = 'http://invoice.invalid/';

/**
 * The preview's policy (the documents route): no script, no fetch, no frame or plugin with a URL; only inline styles
 * and data: images and fonts. `sandbox` also makes Chromium refuse <meta http-equiv=refresh> (scripts stay off).
 * `allow-same-origin` keeps the document's own origin: an opaque one costs a renderer process swap per navigation,
 * and the origin is of a context that holds nothing and is closed after the render.
 */
export const CONTENT_POLICY =
  "sandbox allow-same-origin; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:";

/** Frame owners left out of the print: srcdoc and blank frames, which no policy stops, and the placeholders of the rest. */
const FRAME_OWNERS = 'iframe, frame, object, embed, fencedframe, portal';

/** What a spare's page holds until its render: an empty document of our own. */
const BLANK = '<!doctype html><title></title>';

/** How long setting up a spare may take. */
const PREPARE_TIMEOUT_MS = 30_000;

/** How long close() lets Chromium shut down politely before its process group is killed. */
const CLOSE_GRACE_MS = 5_000;

/** A retry is not started with less than this left of the render's budget. */
const MIN_RETRY_MS = 1_000;

export interface PdfRendererOptions {
  executablePath: string;
  /** Renders at once, each in a browser context of its own (more wait for one to finish). */
  pages: number;
  log: Logger;
  /** Tests: called once the content is loaded, before it is printed (to crash the page, kill the browser). */
  beforePrint?: (page: Page, html: string) => Promise<void>;
}

/** The content made its own page fail on both tries (crashed it, or left its document): the HTML's doing. */
export class PdfContentError extends Error {
  override readonly name = 'PdfContentError';
}

/** Chromium went away under this render and again under its retry. */
export class PdfRendererUnavailableError extends Error {
  override readonly name = 'PdfRendererUnavailableError';
}

/** One attempt's page crashed or was closed while its browser lived on. */
class PageFailed extends Error {}
/** The browser disconnected during one attempt. */
class BrowserGone extends Error {}

interface Launched {
  browser: Browser;
  profile: string;
  /** Rejects with BrowserGone when the browser disconnects (handled: only ever raced). */
  gone: Promise<never>;
}

/** A context with its one page, set up but never given any invoice: used by exactly one render, then closed. */
interface Fresh {
  launched: Launched;
  context: BrowserContext;
  page: Page;
  /** Rejects with PageFailed when the page crashes or closes (handled: only ever raced). */
  broke: Promise<never>;
  failed: boolean;
  /** The document the page's one navigation to CONTENT_URL is answered with. */
  content: string | undefined;
  /** Navigations of the main frame since it was set up. */
  navigations: number;
}

const ignore = (): undefined => undefined;

/**
 * One warm browser per process. The browser starts on the first render (a process that never finalizes never starts
 * one), is started again when it disconnects, and is closed by `close()` (domain stop), which also removes its fresh
 * --user-data-dir. Every render gets a browser context of its own (its own renderer process, nothing kept from other
 * invoices), closed afterwards; its page runs without JavaScript, every request but the document's own is aborted,
 * frames and plugins are refused and navigation away from the content is refused. A page that crashes fails only its
 * own render (retried once in a fresh context); a browser that disconnects is started again and the renders it took
 * down are retried once on the new one. Starting a context and its renderer process costs more than a print, so up to
 * `pages` of them are set up between renders, ahead of the next ones; none of them has held any content.
 */
export class PdfRenderer {
  private browser: Promise<Launched> | undefined;
  /** Decided by the first launch: Chromium's sandbox on, or off where the machine refuses it. */
  private sandbox: boolean | undefined;
  private readonly waiting: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private readonly spares: Promise<Fresh>[] = [];
  private active = 0;
  private closed = false;

  private readonly opts: PdfRendererOptions;
  constructor(opts: PdfRendererOptions) {
    this.opts = opts;
  }

  /**
   * The HTML as an A4 PDF (backgrounds printed). Throws PdfContentError when the content broke its page twice,
   * PdfRendererUnavailableError when the browser died twice under it, and Chromium's own error otherwise (a launch
   * that fails, a timeout).
   */
  async render(html: string, timeoutMs: number): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    await this.acquire();
    let cleanup: Promise<unknown> = Promise.resolve();
    try {
      for (let attempt = 1; ; attempt++) {
        const launched = await this.launched();
        const out = await this.attempt(launched, html, deadline);
        cleanup = out.cleanup;
        if ('pdf' in out) return out.pdf;
        const err = out.error;
        const retry = attempt === 1 && deadline - Date.now() >= MIN_RETRY_MS && !this.closed;
        if (err instanceof BrowserGone) {
          if (!retry) throw new PdfRendererUnavailableError('the PDF renderer stopped during the render; retry');
          this.opts.log.warn('chromium disconnected under a render; it is retried once on a new browser');
        } else if (err instanceof PageFailed) {
          if (!retry) throw new PdfContentError(`its page ${err.message} on each try`);
          this.opts.log.warn(
            { reason: err.message },
            'a PDF page failed; its render is retried once in a fresh context',
          );
        } else {
          throw err;
        }
        await cleanup;
      }
    } finally {
      // The next render's context is set up while this one closes, after the answer is on its way; the slot is free
      // once it is closed.
      this.replenish();
      void cleanup.finally(() => this.release());
    }
  }

  /** One try in a fresh context. Never throws: the outcome, and the context's closing (started, not awaited). */
  private async attempt(
    launched: Launched,
    html: string,
    deadline: number,
  ): Promise<({ pdf: Buffer } | { error: unknown }) & { cleanup: Promise<unknown> }> {
    let fresh: Fresh | undefined;
    const close = (): Promise<unknown> => (fresh ? fresh.context.close().catch(ignore) : Promise.resolve());
    // Every step together within the budget, the ones without a timeout of their own (a context, a page) included.
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('the PDF render did not finish within its time budget')),
        Math.max(1, deadline - Date.now()),
      );
    });
    expired.catch(ignore);
    let taking: Promise<Fresh> | undefined;
    try {
      taking = this.take(launched);
      fresh = await Promise.race([taking, launched.gone, expired]);
      const pdf = await Promise.race([this.print(fresh, html, deadline), fresh.broke, launched.gone, expired]);
      return { pdf, cleanup: close() };
    } catch (err) {
      let error = err;
      if (!launched.browser.connected) error = new BrowserGone('the browser disconnected');
      // A call to a target that went away, answered before its page's own event.
      else if (err instanceof Error && err.name === 'TargetCloseError') error = new PageFailed('was closed');
      // A context that comes after the attempt gave up is closed unused.
      if (!fresh) void taking?.then((f) => f.context.close()).catch(ignore);
      return { error, cleanup: close() };
    } finally {
      clearTimeout(timer);
    }
  }

  private async print(fresh: Fresh, html: string, deadline: number): Promise<Buffer> {
    const { page } = fresh;
    const left = (): number => Math.max(1, deadline - Date.now());
    const stayed = (): void => {
      if (fresh.navigations !== 1 || page.url() !== CONTENT_URL)
        throw new PdfContentError('the HTML navigated away from itself');
    };
    fresh.content = html;
    await page.goto(CONTENT_URL, { waitUntil: 'load', timeout: left() });
    await this.opts.beforePrint?.(page, html);
    if (page.frames().length > 1) await removeFrames(page);
    stayed();
    const pdf = await page.pdf({ format: 'A4', printBackground: true, preferCSSPageSize: true, timeout: left() });
    stayed();
    return Buffer.from(pdf);
  }

  /** A spare of this browser when one is ready or on its way, else a context set up now. */
  private async take(launched: Launched): Promise<Fresh> {
    for (let spare = this.spares.shift(); spare; spare = this.spares.shift()) {
      const fresh = await spare.catch(ignore);
      if (fresh && fresh.launched === launched && !fresh.failed && !fresh.page.isClosed()) return fresh;
      if (fresh) void fresh.context.close().catch(ignore);
    }
    return this.prepare(launched);
  }

  /**
   * One more spare, up to `pages`, after each render. Setting up more at once, or during a render, costs the renders
   * in flight more than waiting for a spare would: a render that finds none waits for the one on its way.
   */
  private replenish(): void {
    const browser = this.browser;
    if (this.closed || !browser || this.spares.length >= this.opts.pages) return;
    const spare = browser.then((launched) => this.prepare(launched));
    spare.catch(ignore);
    this.spares.push(spare);
  }

  private async prepare(launched: Launched): Promise<Fresh> {
    const context = await launched.browser.createBrowserContext();
    try {
      const page = await context.newPage();
      const state = {
        launched,
        context,
        page,
        failed: false,
        content: undefined as string | undefined,
        navigations: 0,
      };
      const broke = new Promise<never>((_, reject) => {
        const fail = (why: string) => (): void => {
          state.failed = true;
          reject(new PageFailed(why));
        };
        page.once('error', fail('crashed'));
        page.once('close', fail('was closed'));
      });
      broke.catch(ignore);
      const fresh: Fresh = Object.assign(state, { broke });
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) fresh.navigations++;
      });
      await page.setJavaScriptEnabled(false);
      await page.setRequestInterception(true);
      page.on('request', (req: HTTPRequest) => {
        const nav = req.isNavigationRequest();
        const html = fresh.content;
        if (html !== undefined && nav && req.frame() === page.mainFrame() && req.url() === CONTENT_URL) {
          // Served once: a second request for it (a reload) is refused like any other.
          fresh.content = undefined;
          void req
            .respond({
              status: 200,
              contentType: 'text/html; charset=utf-8',
              headers: { 'content-security-policy': CONTENT_POLICY },
              body: html,
            })
            .catch(ignore);
        } else if (!nav && req.url().startsWith('data:')) {
          // Inline images and fonts: no network, and the policy allows them.
          void req.continue().catch(ignore);
        } else {
          // "aborted" cancels a navigation without an error page: the content stays where it is.
          void req.abort(nav ? 'aborted' : 'blockedbyclient').catch(ignore);
        }
      });
      // The page's renderer process takes CONTENT_URL's site now, with an empty document of our own: the render's own
      // navigation then only replaces the document.
      fresh.content = BLANK;
      await page.goto(CONTENT_URL, { waitUntil: 'load', timeout: PREPARE_TIMEOUT_MS });
      fresh.navigations = 0;
      return fresh;
    } catch (err) {
      void context.close().catch(ignore);
      throw err;
    }
  }

  /** The running browser, started when there is none or the last one disconnected. */
  private async launched(): Promise<Launched> {
    for (let tries = 0; tries < 3; tries++) {
      if (this.closed) throw new Error('the PDF renderer is closed');
      let current = this.browser;
      if (!current) {
        const started = this.launch();
        current = this.browser = started;
        // A failed launch is not kept: the next render tries again.
        started.catch(() => {
          if (this.browser === started) this.browser = undefined;
        });
      }
      const launched = await current;
      if (launched.browser.connected) return launched;
      if (this.browser === current) this.browser = undefined;
    }
    throw new PdfRendererUnavailableError('the PDF renderer stopped as soon as it started; retry');
  }

  private async launch(): Promise<Launched> {
    if (this.sandbox === undefined && runsAsRoot()) {
      this.sandbox = false;
      this.opts.log.warn(
        'chromium runs without its sandbox (--no-sandbox): this process runs as root, where it refuses one',
      );
    }
    if (this.sandbox !== false) {
      try {
        const launched = await this.start(true);
        this.sandbox = true;
        return launched;
      } catch (err) {
        if (this.sandbox === true || !/sandbox/i.test(String(err))) throw err;
        this.opts.log.warn(
          { err: String(err).slice(0, 500) },
          'chromium runs without its sandbox (--no-sandbox): this machine does not allow it',
        );
        this.sandbox = false;
      }
    }
    return this.start(false);
  }

  private async start(sandboxed: boolean): Promise<Launched> {
    const profile = await mkdtemp(join(tmpdir(), 'svc-chromium-'));
    try {
      const browser = await puppeteer.launch({
        executablePath: this.opts.executablePath,
        headless: true,
        // puppeteer's own defaults would add flags we do not choose (and --enable-automation banners); ours only.
        ignoreDefaultArgs: true,
        args: [
          ...CHROMIUM_FLAGS,
          ...(sandboxed ? [] : ['--no-sandbox']),
          `--user-data-dir=${profile}`,
          '--hide-scrollbars',
          '--mute-audio',
          'about:blank',
        ],
        timeout: 30_000,
        // The process's own shutdown closes the browser after in-flight finalizes (DomainHandle.stop); puppeteer must
        // not kill it first on the same signal.
        handleSIGTERM: false,
        handleSIGINT: false,
        handleSIGHUP: false,
      });
      // puppeteer starts Chromium as the leader of a process group of its own: killed on any exit of ours.
      const pid = browser.process()?.pid;
      const forget = pid === undefined ? () => undefined : killGroupOnExit(pid);
      const gone = new Promise<never>((_, reject) =>
        browser.once('disconnected', () => {
          forget();
          // Forgotten lazily: the next render finds it disconnected and starts a new one.
          if (!this.closed) this.opts.log.warn('chromium disconnected; the next render starts a new browser');
          // Whatever of its group outlived it (helpers of a killed browser) goes too.
          if (pid !== undefined) killGroup(pid);
          void removeProfile(profile);
          reject(new BrowserGone('the browser disconnected'));
        }),
      );
      gone.catch(ignore);
      this.opts.log.info({ pid, sandbox: sandboxed }, 'chromium started for PDF rendering');
      return { browser, profile, gone };
    } catch (err) {
      await removeProfile(profile);
      throw err;
    }
  }

  private async acquire(): Promise<void> {
    if (this.closed) throw new Error('the PDF renderer is closed');
    if (this.active < this.opts.pages) {
      this.active++;
      return;
    }
    return new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** The slot goes to the next waiter as it is (active unchanged), or back to the pool. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next.resolve();
    else this.active = Math.max(0, this.active - 1);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('the PDF renderer is closed'));
    // Spares go with their browser.
    this.spares.length = 0;
    const started = this.browser;
    this.browser = undefined;
    if (!started) return;
    try {
      const { browser, profile } = await started;
      const pid = browser.process()?.pid;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        browser.close().catch(() => undefined),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS))),
      ]);
      clearTimeout(timer);
      // Whatever did not close in time (a busy or hung browser) or outlived it (a helper) goes with its group.
      if (pid !== undefined) killGroup(pid);
      await removeProfile(profile);
    } catch {
      // Never started, or already gone: nothing to close.
    }
  }
}

/** The frame owners of the loaded document, removed through the DOM domain (the page runs no script of its own). */
async function removeFrames(page: Page): Promise<void> {
  const cdp = await page.createCDPSession();
  try {
    const { root } = await cdp.send('DOM.getDocument', { depth: 0 });
    const { nodeIds } = await cdp.send('DOM.querySelectorAll', { nodeId: root.nodeId, selector: FRAME_OWNERS });
    // Outer owners first; an inner one already went with its parent.
    for (const nodeId of nodeIds) await cdp.send('DOM.removeNode', { nodeId }).catch(ignore);
  } finally {
    await cdp.detach().catch(ignore);
  }
}
