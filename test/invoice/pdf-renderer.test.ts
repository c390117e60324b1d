import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { afterEach, describe, expect, it } from 'vitest';
import { PdfRenderer, runsAsRoot, type PdfRendererOptions } from '../../actors/invoice/pdf/browser.ts';
import { createLogger } from '../../platform/logger.ts';
import { capturingLogger, type LogLine } from '../support/log-capture.ts';
import { pdfText } from './pdf-text.ts';

/**
 * The renderer module on its own, against the real Chromium: a page that crashes or a browser that dies under
 * renders in flight. The crash is Chromium's own (CDP `Page.crash` kills the page's renderer process); the hook that
 * sends it is the renderer's `beforePrint`, called once the content is loaded.
 */
const executablePath = process.env.SVC_CHROMIUM_PATH ?? '/usr/bin/chromium';
let renderer: PdfRenderer | undefined;
afterEach(async () => {
  await renderer?.close();
  renderer = undefined;
});
const start = (opts: Partial<PdfRendererOptions> = {}): PdfRenderer =>
  (renderer = new PdfRenderer({ executablePath, pages: 3, log: createLogger('silent'), ...opts }));
const doc = (title: string): string => `<html><body><h1>${title}</h1><p>${'line '.repeat(100)}</p></body></html>`;
const textOf = (pdf: Buffer): string => pdfText(pdf).text.replace(/\s+/g, '');
const crash = async (page: Page): Promise<void> => {
  const cdp = await page.createCDPSession();
  // Answered by the crash itself (the target goes away), so its reply is not waited for.
  void cdp.send('Page.crash').catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
};

describe('PdfRenderer', () => {
  it('a page that crashes on every try fails only its own render, with an error naming the content', async () => {
    const r = start({ beforePrint: async (page, html) => (html.includes('CRASH') ? crash(page) : undefined) });
    const [bad, ...good] = await Promise.allSettled([
      r.render(doc('CRASH me'), 20_000),
      r.render(doc('Invoice A'), 20_000),
      r.render(doc('Invoice B'), 20_000),
    ]);
    expect(bad.status).toBe('rejected');
    expect(String((bad as PromiseRejectedResult).reason)).toMatch(/crashed/);
    expect((bad as PromiseRejectedResult).reason).toMatchObject({ name: 'PdfContentError' });
    expect(good.map((g) => (g.status === 'fulfilled' ? textOf(g.value) : String(g.reason)))).toEqual([
      expect.stringContaining('InvoiceA'),
      expect.stringContaining('InvoiceB'),
    ]);
    // The browser lived on: the next render is served by it.
    expect(textOf(await r.render(doc('Invoice C'), 20_000))).toContain('InvoiceC');
  }, 90_000);

  it('a page that crashes once is rendered again in a fresh context', async () => {
    let crashes = 0;
    const r = start({
      beforePrint: async (page, html) => {
        if (html.includes('ONCE') && crashes++ === 0) await crash(page);
      },
    });
    expect(textOf(await r.render(doc('ONCE then good'), 20_000))).toContain('ONCEthengood');
    expect(crashes).toBe(2);
  }, 60_000);

  it('a browser that dies under renders in flight is started again, and those renders are retried on it', async () => {
    const logs = capturingLogger('info');
    let killed = 0;
    const r = start({
      log: logs.log,
      beforePrint: async (page, html) => {
        if (!html.includes('KILL') || killed++ > 0) return;
        // The others are loaded by now, or about to be: all three are in flight when the browser goes.
        await new Promise((resolve) => setTimeout(resolve, 300));
        page.browser().process()?.kill('SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      },
    });
    const results = await Promise.allSettled([
      r.render(doc('KILL the browser'), 90_000),
      r.render(doc('Invoice D'), 90_000),
      r.render(doc('Invoice E'), 90_000),
    ]);
    expect(results.map((g) => (g.status === 'fulfilled' ? textOf(g.value) : String(g.reason)))).toEqual([
      expect.stringContaining('KILLthebrowser'),
      expect.stringContaining('InvoiceD'),
      expect.stringContaining('InvoiceE'),
    ]);
    expect(logs.lines.filter((l) => l.msg === 'chromium started for PDF rendering')).toHaveLength(2);
  }, 180_000);
});

/** uid and gid of `nobody`, when this machine has one. */
function nobody(): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('nobody:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

/** test/fixtures/pdf-render-once.ts as `user`, with Chromium at `chromium`: its JSON lines. */
async function renderAs(user: { uid: number; gid: number }, chromium: string, home: string): Promise<LogLine[]> {
  const child = spawn(process.execPath, ['test/fixtures/pdf-render-once.ts', chromium], {
    uid: user.uid,
    gid: user.gid,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, out).toBe(0);
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

describe("Chromium's sandbox", () => {
  it('is off as root, with a log line saying why', async () => {
    const logs = capturingLogger('info');
    const r = start({ log: logs.log });
    await r.render(doc('Root'), 20_000);
    const started = logs.lines.find((l) => l.msg === 'chromium started for PDF rendering');
    expect(started).toMatchObject({ sandbox: !runsAsRoot() });
    if (runsAsRoot())
      expect(logs.lines.map((l) => l.msg)).toContain(
        'chromium runs without its sandbox (--no-sandbox): this process runs as root, where it refuses one',
      );
  }, 60_000);

  const user = runsAsRoot() ? nobody() : undefined;
  it.skipIf(!user)(
    'is on for another user where the machine allows it, and falls back where it does not',
    async () => {
      const home = mkdtempSync(join(tmpdir(), 'svc-sandbox-test-'));
      try {
        chmodSync(home, 0o777);
        const on = await renderAs(user!, executablePath, home);
        expect(on.find((l) => l.msg === 'chromium started for PDF rendering')).toMatchObject({ sandbox: true });
        expect(on.find((l) => l.msg === 'rendered')).toMatchObject({ bytes: expect.any(Number) });
        // A Chromium that refuses its sandbox the way one without user namespaces or a setuid helper does.
        const refusing = join(home, 'chromium-without-sandbox');
        writeFileSync(
          refusing,
          `#!/bin/sh\ncase " $* " in *" --no-sandbox "*) exec ${executablePath} "$@";; esac\n` +
            `echo "[FATAL:zygote_host_impl_linux.cc] No usable sandbox! Update your kernel or see the docs." >&2\nexit 1\n`,
        );
        chmodSync(refusing, 0o755);
        const off = await renderAs(user!, refusing, home);
        expect(off.map((l) => l.msg)).toContain(
          'chromium runs without its sandbox (--no-sandbox): this machine does not allow it',
        );
        expect(off.find((l) => l.msg === 'chromium started for PDF rendering')).toMatchObject({ sandbox: false });
        expect(off.find((l) => l.msg === 'rendered')).toMatchObject({ bytes: expect.any(Number) });
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    },
    90_000,
  );
});
