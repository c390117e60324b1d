import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, linksOf } from './markdown.ts';

/**
 * Every relative link of README.md, CHANGELOG.md and docs/**.md leads somewhere: the file exists (inside the
 * repository) and its #anchor is a heading of that file as GitHub names it.
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
    // A clone holds only the repository: a link leaving it leads nowhere there, whatever this machine has beside it.
    if (relative(ROOT, dest).startsWith('..')) {
      problems.push(`${where}: ${target}: outside the repository`);
      continue;
    }
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

describe('the repository stands on its own', () => {
  it('no tracked file names the interface documents or other folders beside the repository', () => {
    // Built from parts, so that this file does not match itself.
    const outside = new RegExp(
      [
        ['shared/', '(spec|fixtures)/'].join(''),
        ['shared/', 'ARCHITECTURE', '\\.md'].join(''),
        ['console-', '(operations|identity)\\.md'].join(''),
      ].join('|'),
    );
    const tracked = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);
    const hits = tracked
      .filter((f) => existsSync(f) && statSync(f).size < 2_000_000 && !/\.(png|jpe?g|pdf|gz|ico|woff2?)$/.test(f))
      .flatMap((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .flatMap((text, i) => (outside.test(text) ? [`${f}:${i + 1}`] : [])),
      );
    expect(hits).toEqual([]);
  });
});
