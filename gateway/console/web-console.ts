import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { GatewayApp } from '../shared/app.ts';
import type { PageServer } from '../shared/plugins/not-found.ts';

/** Where `npm run web:build` puts the console (web/dist). */
export const WEB_DIST = new URL('../../web/dist/', import.meta.url).pathname;

/** Paths that are the API's or the gateway's own: never answered with the console's page. */
const NOT_PAGES = /^\/(api|swagger|metrics|healthz|readyz|debug)(\/|$)/;

/**
 * The page's policy: scripts and styles only from the console's own files (Vite emits no inline script), calls only
 * to the two services, nothing framed and nothing framing it.
 */
export function pagePolicy(connect: string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${connect.join(' ')}`.trim(),
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function filesUnder(root: string): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else out.add(`/${relative(root, path)}`);
    }
  };
  walk(root);
  return out;
}

/**
 * The built console served by the console gateway: hashed files under /assets/ cached for a year, every other path a
 * browser asks a page of answered with index.html (the console routes in the browser), never cached, with the
 * page's policy. Undefined when the console is not built.
 */
export async function webConsole(
  app: GatewayApp,
  opts: { root?: string; connect: string[] },
): Promise<PageServer | undefined> {
  const root = opts.root ?? WEB_DIST;
  if (!existsSync(join(root, 'index.html'))) return undefined;
  // Only files the build holds are ever sent. The list is read again when a new build replaced index.html (a rebuild
  // under a running gateway, as in development).
  const builtAt = (): number => statSync(join(root, 'index.html'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  let scanned = builtAt();
  let files = filesUnder(root);
  const known = (path: string): boolean => {
    if (files.has(path)) return true;
    const now = builtAt();
    if (now === scanned) return false;
    scanned = now;
    files = filesUnder(root);
    return files.has(path);
  };
  await app.register(fastifyStatic, { root, serve: false });
  const policy = pagePolicy(opts.connect.map((u) => new URL(u).origin));
  return (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    let path: string;
    try {
      path = decodeURIComponent(req.url.split('?')[0] ?? '/');
    } catch {
      return undefined;
    }
    if (NOT_PAGES.test(path)) return undefined;
    if (path !== '/index.html' && known(path)) {
      const hashed = path.startsWith('/assets/');
      return reply.sendFile(path.slice(1), {
        cacheControl: true,
        maxAge: hashed ? '365d' : 0,
        immutable: hashed,
      });
    }
    // A missing file with an extension is a missing file, not a page of the console.
    if (/\.[a-z0-9]+$/i.test(path)) return undefined;
    void reply.header('content-security-policy', policy).header('cache-control', 'no-cache');
    return reply.sendFile('index.html', { cacheControl: false });
  };
}
