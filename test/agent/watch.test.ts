import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentEventBatch, WatchFilesConfig } from '../../contracts/domains/agent-telemetry.ts';
import type { FileChangeIn, FileWatcher } from '../../agent/collect/types.ts';
import { createFileWatcher } from '../../agent/watch/files.ts';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dir: string;
let events: FileChangeIn[];
let batches: number;
let watcher: FileWatcher;

/** Waits until `n` events matching `pred` arrived (or fails after 3 s). */
async function waitFor(pred: (e: FileChangeIn) => boolean, n = 1): Promise<FileChangeIn[]> {
  const until = Date.now() + 3_000;
  for (;;) {
    const got = events.filter(pred);
    if (got.length >= n) return got;
    if (Date.now() > until) throw new Error(`expected ${n} matching events, got ${JSON.stringify(events, null, 1)}`);
    await sleep(20);
  }
}

/** Long enough for any debounced report to have arrived: what has not arrived by now will not. */
const settle = () => sleep(600);

const apply = (config: Partial<WatchFilesConfig> & { paths: string[] }) =>
  watcher.apply(WatchFilesConfig.parse(config));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agent-watch-'));
  events = [];
  batches = 0;
  watcher = createFileWatcher((batch) => {
    batches++;
    // Every batch is what the agent would publish: it must parse.
    AgentEventBatch.parse({ events: batch });
    events.push(...batch);
  });
});
afterEach(async () => {
  await watcher.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('file watcher', () => {
  it('reports created, modified and deleted files with size and SHA-256, in subdirectories created later too', async () => {
    writeFileSync(join(dir, 'existing.conf'), 'a=1\n');
    await apply({ paths: [dir] });

    writeFileSync(join(dir, 'new.txt'), 'hello');
    const [created] = await waitFor((e) => e.path === join(dir, 'new.txt'));
    expect(created).toMatchObject({
      type: 'file_change',
      change: 'created',
      size_bytes: 5,
      sha256: sha('hello'),
      sensitive: false,
    });

    writeFileSync(join(dir, 'existing.conf'), 'a=2\nb=3\n');
    const [modified] = await waitFor((e) => e.path === join(dir, 'existing.conf'));
    expect(modified).toMatchObject({ change: 'modified', size_bytes: 8, sha256: sha('a=2\nb=3\n') });

    mkdirSync(join(dir, 'sub', 'deeper'), { recursive: true });
    writeFileSync(join(dir, 'sub', 'deeper', 'x.yml'), 'x: 1');
    expect((await waitFor((e) => e.path === join(dir, 'sub', 'deeper', 'x.yml')))[0]).toMatchObject({
      change: 'created',
      sha256: sha('x: 1'),
    });

    unlinkSync(join(dir, 'new.txt'));
    expect((await waitFor((e) => e.path === join(dir, 'new.txt') && e.change === 'deleted'))[0]).toMatchObject({
      size_bytes: null,
      sha256: null,
    });

    // Changes inside the later-created subdirectory are watched as well.
    writeFileSync(join(dir, 'sub', 'deeper', 'x.yml'), 'x: 2');
    expect(
      (await waitFor((e) => e.path === join(dir, 'sub', 'deeper', 'x.yml') && e.change === 'modified'))[0]!.sha256,
    ).toBe(sha('x: 2'));
    // The directories themselves are not reported.
    expect(events.some((e) => e.path === join(dir, 'sub') || e.path === join(dir, 'sub', 'deeper'))).toBe(false);
  });

  it('a burst of writes to one file is one event; a file created and removed within the burst is none', async () => {
    writeFileSync(join(dir, 'log.txt'), '');
    await apply({ paths: [dir] });
    for (let i = 0; i < 20; i++) {
      appendFileSync(join(dir, 'log.txt'), `line ${i}\n`);
      await sleep(5);
    }
    writeFileSync(join(dir, 'tmp.swp'), 'x');
    unlinkSync(join(dir, 'tmp.swp'));
    await settle();
    const content = Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join('');
    expect(events).toEqual([
      expect.objectContaining({
        path: join(dir, 'log.txt'),
        change: 'modified',
        size_bytes: content.length,
        sha256: sha(content),
      }),
    ]);
  });

  it('a directory removed or moved away reports each file it held as deleted', async () => {
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    writeFileSync(join(dir, 'a', 'one'), '1');
    writeFileSync(join(dir, 'a', 'b', 'two'), '2');
    mkdirSync(join(dir, 'm'));
    writeFileSync(join(dir, 'm', 'three'), '3');
    const elsewhere = mkdtempSync(join(tmpdir(), 'agent-watch-away-'));
    try {
      await apply({ paths: [dir] });
      rmSync(join(dir, 'a'), { recursive: true });
      renameSync(join(dir, 'm'), join(elsewhere, 'm'));
      const deleted = await waitFor((e) => e.change === 'deleted', 3);
      expect(deleted.map((e) => e.path).sort()).toEqual([
        join(dir, 'a', 'b', 'two'),
        join(dir, 'a', 'one'),
        join(dir, 'm', 'three'),
      ]);
      await settle();
      expect(events).toHaveLength(3);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('exclude patterns: basename globs and path globs, excluded directories not watched at all', async () => {
    mkdirSync(join(dir, 'cache'));
    await apply({ paths: [dir], exclude_patterns: ['*.log', `${dir}/cache*`, 'tmp?'] });
    writeFileSync(join(dir, 'app.log'), 'noise');
    writeFileSync(join(dir, 'cache', 'blob'), 'noise');
    writeFileSync(join(dir, 'tmp1'), 'noise');
    writeFileSync(join(dir, 'tmp12'), 'kept: ? is one character');
    writeFileSync(join(dir, 'app.conf'), 'kept');
    await waitFor((e) => e.path === join(dir, 'app.conf'));
    await settle();
    expect(events.map((e) => e.path).sort()).toEqual([join(dir, 'app.conf'), join(dir, 'tmp12')]);
  });

  it('sensitive files: the change is reported, never the hash', async () => {
    writeFileSync(join(dir, 'shadow'), 'root:*:19000:0:99999:7:::\n');
    mkdirSync(join(dir, 'keys'));
    await apply({ paths: [dir], sensitive_files: [join(dir, 'shadow'), join(dir, 'keys'), '*.pem'] });
    writeFileSync(join(dir, 'shadow'), 'root:$6$new:19001:0:99999:7:::\n');
    writeFileSync(join(dir, 'keys', 'id_ed25519'), 'secret');
    writeFileSync(join(dir, 'server.pem'), 'secret');
    writeFileSync(join(dir, 'plain.txt'), 'public');
    await waitFor(() => true, 4);
    const by = (name: string) => events.find((e) => e.path.endsWith(name))!;
    expect(by('shadow')).toMatchObject({ change: 'modified', sensitive: true, sha256: null, size_bytes: 31 });
    expect(by('id_ed25519')).toMatchObject({ change: 'created', sensitive: true, sha256: null });
    expect(by('server.pem')).toMatchObject({ sensitive: true, sha256: null });
    expect(by('plain.txt')).toMatchObject({ sensitive: false, sha256: sha('public') });
    unlinkSync(join(dir, 'shadow'));
    expect((await waitFor((e) => e.path.endsWith('shadow') && e.change === 'deleted'))[0]!.sensitive).toBe(true);
  });

  it('max_file_size: larger files are reported with their size but without a hash', async () => {
    await apply({ paths: [dir], max_file_size: 1024 });
    writeFileSync(join(dir, 'small'), Buffer.alloc(1024, 1));
    writeFileSync(join(dir, 'big'), Buffer.alloc(1025, 1));
    await waitFor(() => true, 2);
    expect(events.find((e) => e.path.endsWith('small'))).toMatchObject({
      size_bytes: 1024,
      sha256: sha(Buffer.alloc(1024, 1)),
    });
    expect(events.find((e) => e.path.endsWith('big'))).toMatchObject({
      size_bytes: 1025,
      sha256: null,
      sensitive: false,
    });
  });

  it('a watched file: its siblings are ignored; an atomic replace (write + rename) is a modification; deletion and re-creation are seen', async () => {
    const file = join(dir, 'app.yaml');
    writeFileSync(file, 'v: 1');
    await apply({ paths: [file] });
    writeFileSync(join(dir, 'sibling'), 'ignored');
    writeFileSync(join(dir, '.app.yaml.tmp'), 'v: 2');
    renameSync(join(dir, '.app.yaml.tmp'), file);
    await waitFor((e) => e.path === file);
    await settle();
    expect(events).toEqual([expect.objectContaining({ path: file, change: 'modified', sha256: sha('v: 2') })]);
    unlinkSync(file);
    await waitFor((e) => e.change === 'deleted');
    writeFileSync(file, 'v: 3');
    expect((await waitFor((e) => e.path === file && e.change === 'created'))[0]!.sha256).toBe(sha('v: 3'));
  });

  it('a configured path that does not exist yet is reported once it appears', async () => {
    await apply({ paths: [join(dir, 'later.conf'), join(dir, 'later.d')] });
    writeFileSync(join(dir, 'later.conf'), 'x');
    mkdirSync(join(dir, 'later.d'));
    writeFileSync(join(dir, 'later.d', 'inner'), 'y');
    await waitFor(() => true, 2);
    await settle();
    expect(events.map((e) => [e.path, e.change]).sort()).toEqual([
      [join(dir, 'later.conf'), 'created'],
      [join(dir, 'later.d', 'inner'), 'created'],
    ]);
  });

  it('apply() replaces the watched set; stop() ends all reporting', async () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    mkdirSync(a);
    mkdirSync(b);
    await apply({ paths: [a] });
    writeFileSync(join(a, '1'), '1');
    await waitFor((e) => e.path === join(a, '1'));

    await apply({ paths: [b] });
    writeFileSync(join(a, '2'), '2');
    writeFileSync(join(b, '3'), '3');
    await waitFor((e) => e.path === join(b, '3'));
    await settle();
    expect(events.map((e) => e.path)).toEqual([join(a, '1'), join(b, '3')]);

    await watcher.stop();
    writeFileSync(join(b, '4'), '4');
    await settle();
    expect(events).toHaveLength(2);
    expect(batches).toBeGreaterThan(0);
  });

  it('changes still waiting out their debounce when the set is replaced are reported', async () => {
    await apply({ paths: [dir] });
    writeFileSync(join(dir, 'late'), 'x');
    await sleep(50);
    await apply({ paths: [join(dir, 'elsewhere')] });
    await waitFor((e) => e.path === join(dir, 'late'));
  });
});
