// A headless Chromium of the bench's own, set up as the invoice renderer sets up its pages: the invoice part's bare
// render, and the report's charts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { CHROMIUM_FLAGS, runsAsRoot } from '../actors/invoice/pdf/browser.ts';

/**
 * One browser of the bench's own with the renderer's flags and one warm page, reused for every render (JavaScript off,
 * offline): the floor that finalize, which prints in a fresh context each time, is measured against.
 */
export async function bareBrowser(executablePath: string): Promise<{ page: Page; close: () => Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'bench-chromium-'));
  const browser: Browser = await puppeteer.launch({
    executablePath,
    headless: true,
    ignoreDefaultArgs: true,
    args: [
      ...CHROMIUM_FLAGS,
      // Chromium refuses its sandbox to root (the renderer falls back the same way).
      ...(runsAsRoot() ? ['--no-sandbox'] : []),
      `--user-data-dir=${profile}`,
      '--hide-scrollbars',
      '--mute-audio',
      'about:blank',
    ],
    timeout: 30_000,
  });
  const page = await browser.newPage();
  await page.setJavaScriptEnabled(false);
  await page.setOfflineMode(true);
  return {
    page,
    close: async () => {
      await browser.close().catch(() => undefined);
      await rm(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() => undefined);
    },
  };
}
