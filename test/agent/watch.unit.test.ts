import { describe, expect, it } from 'vitest';
import { globMatcher } from '../../agent/watch/files.ts';

/** The file watcher's exclude patterns (the watcher itself, on a real directory: watch.test.ts). */
describe('glob matcher', () => {
  it('matches full paths or base names; * spans directories, ? is one character, the rest is literal', () => {
    const m = globMatcher(['*.log', '/var/cache/*', 'core.[0-9]', 'id_?sa']);
    expect(m('/var/log/syslog.log')).toBe(true);
    expect(m('/var/cache/apt/archives/x.deb')).toBe(true);
    expect(m('/var/cache')).toBe(false);
    expect(m('/tmp/core.[0-9]')).toBe(true);
    expect(m('/tmp/core.1')).toBe(false);
    expect(m('/root/.ssh/id_rsa')).toBe(true);
    expect(m('/root/.ssh/id_ed25519')).toBe(false);
    expect(m('/etc/logrotate.conf')).toBe(false);
  });
});
