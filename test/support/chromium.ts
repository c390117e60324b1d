import { chromium, type Browser } from 'playwright-core';

// The browser the browser tests and the web bench drive (no test framework here: the bench imports it too).

/** Debian's Chromium, installed by the set-up; Playwright's own download cannot work here. */
export const CHROMIUM = process.env.SVC_CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Headless Chromium with no background traffic of its own (and without its sandbox as root, which it refuses). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
    ],
  });
}
