import { AxeBuilder } from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

export { CHROMIUM, launchBrowser } from './chromium.ts';

/** Where each main page's screenshot is kept as a test artifact. */
export const SCREENSHOTS = resolve('data/screenshots');

/** Everything a page's console said that a test must see: errors, and policy violations above all. */
export function consoleProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text());
  });
  page.on('pageerror', (err) => {
    problems.push(`page error: ${err.message}`);
    // Where it came from, for the log: the assertion shows only the message.
    console.error(`[browser] page error on ${page.url()}: ${err.stack ?? err.message}`);
  });
  return problems;
}

/** axe-core on the page as it stands: no serious or critical violation (WCAG 2.1 A and AA rules). */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const bad = result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(bad, `${what}: accessibility violations`).toEqual([]);
}

/** A full-page screenshot under data/screenshots/<name>.png. */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
