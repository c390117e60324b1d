import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { killGroup, killGroupOnExit } from '../../runtime/child-reaper.ts';
import type { Logger } from '../../runtime/logger.ts';

/** Chromium may still be writing its profile while it exits: retried, and never an error of the caller's. */
const removeProfile = (dir: string): Promise<void> =>
  rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() => undefined);

/** Chromium as the PDF renderer runs it: no network of its own, no background services, a profile of its own. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

/** How long close() lets Chromium shut down politely before its process group is killed. */
const CLOSE_GRACE_MS = 5_000;

export interface PdfRendererOptions {
  executablePath: string;
  /** Pages kept open and reused (renders beyond this wait for a free page). */
  pages: number;
  log: Logger;
}

/**
 * One warm browser per process and a small pool of pages. The browser starts on the first render (a process that
 * never finalizes never starts one), is started again if it dies, and is closed by `close()` (domain stop), which also
 * removes its fresh --user-data-dir. Pages run without JavaScript and offline: the template needs neither, and an
 * html_override must not fetch or run anything while it becomes a PDF.
 */
export class PdfRenderer {
  private browser: Promise<{ browser: Browser; profile: string }> | undefined;
  private readonly idle: Page[] = [];
  private readonly waiting: { resolve: (page: Page) => void; reject: (err: unknown) => void }[] = [];
  private open = 0;
  private closed = false;

  private readonly opts: PdfRendererOptions;
  constructor(opts: PdfRendererOptions) {
    this.opts = opts;
  }

  /** The HTML as an A4 PDF (backgrounds printed). Throws when Chromium cannot start or render. */
  async render(html: string, timeoutMs: number): Promise<Buffer> {
    const page = await this.acquire();
    let healthy = false;
    try {
      await page.setContent(html, { waitUntil: 'load', timeout: timeoutMs });
      const pdf = await page.pdf({ format: 'A4', printBackground: true, preferCSSPageSize: true, timeout: timeoutMs });
      healthy = true;
      return Buffer.from(pdf);
    } finally {
      this.release(page, healthy);
    }
  }

  private async launch(): Promise<{ browser: Browser; profile: string }> {
    const profile = await mkdtemp(join(tmpdir(), 'svc-chromium-'));
    try {
      const browser = await puppeteer.launch({
        executablePath: this.opts.executablePath,
        headless: true,
        // puppeteer's own defaults would add flags we do not choose (and --enable-automation banners); ours only.
        ignoreDefaultArgs: true,
        args: [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, '--hide-scrollbars', '--mute-audio', 'about:blank'],
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
      browser.on('disconnected', () => {
        forget();
        // A crashed browser is forgotten with its pages; the next render starts a new one.
        if (!this.closed) this.opts.log.warn('chromium disconnected; the next render starts a new browser');
        this.browser = undefined;
        this.idle.length = 0;
        this.open = 0;
        void removeProfile(profile);
      });
      this.opts.log.info({ pid: browser.process()?.pid }, 'chromium started for PDF rendering');
      return { browser, profile };
    } catch (err) {
      await removeProfile(profile);
      throw err;
    }
  }

  private async acquire(): Promise<Page> {
    if (this.closed) throw new Error('the PDF renderer is closed');
    let page = this.idle.pop();
    while (page?.isClosed()) {
      this.open = Math.max(0, this.open - 1);
      page = this.idle.pop();
    }
    if (page) return page;
    if (this.open >= this.opts.pages)
      return new Promise<Page>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.open++;
    try {
      if (!this.browser) {
        this.browser = this.launch();
        // A failed launch is not kept: the next render tries again.
        this.browser.catch(() => (this.browser = undefined));
      }
      const { browser } = await this.browser;
      const fresh = await browser.newPage();
      await fresh.setJavaScriptEnabled(false);
      await fresh.setOfflineMode(true);
      return fresh;
    } catch (err) {
      this.open = Math.max(0, this.open - 1);
      throw err;
    }
  }

  private release(page: Page, healthy: boolean): void {
    if (!healthy || this.closed) {
      // A page that failed is not trusted again; a waiter gets a fresh one instead.
      this.open = Math.max(0, this.open - 1);
      void page.close().catch(() => undefined);
      const next = this.waiting.shift();
      if (next) void this.acquire().then(next.resolve, next.reject);
      return;
    }
    const next = this.waiting.shift();
    if (next) next.resolve(page);
    else this.idle.push(page);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('the PDF renderer is closed'));
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
