import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, linksOf } from './markdown.ts';

/**
 * Every relative link of README.md, CHANGELOG.md and docs/**.md leads somewhere: the file exists (inside the
 * repository or, for the specs, beside it) and its #anchor is a heading of that file as GitHub names it.
 */

const ROOT = resolve('.');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const files = ['README.md', 'CHANGELOG.md', ...(existsSync('docs') ? markdownFiles('docs') : [])].map((f) =>
  resolve(f),
);

/** What is wrong with each relative link of `file`, as `file:line: message`. */
function brokenLinks(file: string): string[] {
  const problems: string[] = [];
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (path: string): Set<string> => {
    if (!anchors.has(path)) anchors.set(path, anchorsOf(readFileSync(path, 'utf8')));
    return anchors.get(path)!;
  };
  for (const { target, line } of linksOf(readFileSync(file, 'utf8'))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, mailto: … are not this check's business
    const [path = '', fragment] = target.split('#', 2);
    const dest = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
    const where = `${relative(ROOT, file)}:${line}`;
    if (!existsSync(dest)) {
      problems.push(`${where}: ${target}: no such file`);
      continue;
    }
    if (fragment !== undefined && dest.endsWith('.md') && !anchorsIn(dest).has(decodeURIComponent(fragment))) {
      problems.push(`${where}: ${target}: no heading with that anchor in ${relative(ROOT, dest)}`);
    }
  }
  return problems;
}

describe('markdown links', () => {
  it('README.md, CHANGELOG.md and docs/ are checked (docs/ holds the reference)', () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/api/conventions.md']),
    );
  });

  it.each(files.map((f) => [relative(ROOT, f), f]))('every relative link and #anchor of %s resolves', (_name, file) => {
    expect(brokenLinks(file)).toEqual([]);
  });
});
