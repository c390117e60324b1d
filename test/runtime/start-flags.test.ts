import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startFlags } from '../../scripts/start-flags.ts';

/** `npm start` (scripts/start.sh), the container and the bench run the system's process with the same V8 settings. */
describe('how the system process is started', () => {
  const start = startFlags();

  it('reads NODE_OPTIONS and node flags from start.sh, and this runtime takes them', () => {
    expect(start.nodeOptions).toBe('--max-semi-space-size=64');
    expect(start.flags).toEqual(['--external-memory-accounted-in-global-limit']);
    // A runtime that dropped the flag would refuse to start (node exits 9 on an unknown V8 flag).
    const run = spawnSync(process.execPath, [...start.flags, '-e', 'process.exit(0)'], {
      env: { ...process.env, NODE_OPTIONS: start.nodeOptions },
    });
    expect(run.stderr.toString()).toBe('');
    expect(run.status).toBe(0);
  });

  it('gives the container the same settings', () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    expect(/NODE_OPTIONS=(\S+)/.exec(dockerfile)?.[1]).toBe(start.nodeOptions);
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(cmd ?? 'null')).toEqual(['node', ...start.flags, 'main.ts']);
    // `npm run serve` (main.ts on its own, no set-up) takes the flags too.
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.serve).toBe(['node', ...start.flags, 'main.ts'].join(' '));
  });
});
