import { basename, sep } from 'node:path';

/**
 * Glob-ish patterns for exclude_patterns and sensitive_files: `*` is any run of characters (`/` included), `?` one
 * character, everything else literal; a pattern matches the full path or the base name. `*.log` excludes every log
 * file, `/etc/ssl/*` everything under /etc/ssl, `/etc/shadow` exactly that file.
 */
export function globMatcher(patterns: string[]): (path: string) => boolean {
  const res = patterns.map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*+/g, '.*')
          .replace(/\?/g, '.')}$`,
      ),
  );
  return (path) => {
    const name = basename(path);
    return res.some((re) => re.test(path) || re.test(name));
  };
}

/** Whether `path` is `root` or lies beneath it. */
export const under = (path: string, root: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
