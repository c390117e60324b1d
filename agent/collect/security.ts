import { join } from 'node:path';
import type { SecurityItemIn } from './contract-inputs.ts';
import { listDir, readText, readTrimmed, type Roots } from './read.ts';
import type { PasswdEntry } from './users.ts';

/** sshd's defaults (OpenSSH 7+) for the settings reported when the config leaves them unset. */
const SSHD_DEFAULTS: Record<string, string> = {
  permitrootlogin: 'prohibit-password',
  passwordauthentication: 'yes',
  port: '22',
  pubkeyauthentication: 'yes',
  permitemptypasswords: 'no',
  x11forwarding: 'no',
};
const SSHD_NAMES: Record<string, string> = {
  permitrootlogin: 'PermitRootLogin',
  passwordauthentication: 'PasswordAuthentication',
  port: 'Port',
  pubkeyauthentication: 'PubkeyAuthentication',
  permitemptypasswords: 'PermitEmptyPasswords',
  x11forwarding: 'X11Forwarding',
};

/**
 * sshd_config with its `Include`d files (glob `*` in the last path element): sshd keeps the FIRST value of a keyword,
 * so the first one found wins; `Match` blocks are conditional and are ignored (only global settings count).
 */
export async function readSshdSettings(
  path: string,
  etc: string,
  depth = 0,
  into = new Map<string, string>(),
): Promise<Map<string, string> | null> {
  const text = await readText(path);
  if (text === null) return null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(\S+)\s*[=\s]\s*(.+)$/.exec(line);
    if (!m) continue;
    const key = m[1]!.toLowerCase();
    if (key === 'match') break;
    if (key === 'include' && depth < 4) {
      for (const pattern of m[2]!.split(/\s+/)) {
        const full = pattern.startsWith('/') ? pattern.replace(/^\/etc(?=\/)/, etc) : join(etc, 'ssh', pattern);
        const dir = full.slice(0, full.lastIndexOf('/'));
        const glob = full.slice(full.lastIndexOf('/') + 1);
        const re = new RegExp(
          `^${glob
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '.*')
            .replace(/\?/g, '.')}$`,
        );
        for (const f of (await listDir(dir)).filter((n) => re.test(n)).sort())
          await readSshdSettings(join(dir, f), etc, depth + 1, into);
      }
      continue;
    }
    if (!into.has(key)) into.set(key, m[2]!.replace(/^"(.*)"$/, '$1'));
  }
  return into;
}

const SYSCTLS = [
  'kernel/randomize_va_space',
  'kernel/kptr_restrict',
  'kernel/dmesg_restrict',
  'kernel/unprivileged_bpf_disabled',
  'kernel/yama/ptrace_scope',
  'net/ipv4/ip_forward',
  'net/ipv4/tcp_syncookies',
  'net/ipv4/conf/all/accept_redirects',
  'net/ipv4/conf/all/rp_filter',
  'fs/protected_symlinks',
  'fs/protected_hardlinks',
  'fs/suid_dumpable',
];

/**
 * A few real hardening facts: sshd's effective global settings (when sshd_config exists; defaults marked), kernel
 * sysctls, the SELinux mode and whether AppArmor is enabled, and which accounts have uid 0. Empty-password accounts
 * are not reported: /etc/shadow is not read.
 */
export async function collectSecurityItems(roots: Roots, passwd: PasswdEntry[]): Promise<SecurityItemIn[]> {
  const items: SecurityItemIn[] = [];
  const sshd = await readSshdSettings(join(roots.etc, 'ssh', 'sshd_config'), roots.etc);
  if (sshd) {
    for (const [key, name] of Object.entries(SSHD_NAMES)) {
      const v = sshd.get(key);
      items.push({ category: 'sshd', key: name, value: v ?? `${SSHD_DEFAULTS[key]} (default)` });
    }
  }
  const sysctls = await Promise.all(SYSCTLS.map((s) => readTrimmed(join(roots.proc, 'sys', s))));
  SYSCTLS.forEach((s, i) => {
    const v = sysctls[i];
    if (v !== null && v !== undefined) items.push({ category: 'kernel', key: s.replace(/\//g, '.'), value: v });
  });
  const [enforce, apparmor] = await Promise.all([
    readTrimmed(join(roots.sys, 'fs', 'selinux', 'enforce')),
    readTrimmed(join(roots.sys, 'module', 'apparmor', 'parameters', 'enabled')),
  ]);
  items.push({
    category: 'selinux',
    key: 'mode',
    value: enforce === '1' ? 'enforcing' : enforce === '0' ? 'permissive' : 'disabled',
  });
  items.push({ category: 'apparmor', key: 'enabled', value: apparmor === 'Y' ? 'yes' : 'no' });
  if (passwd.length > 0)
    items.push({
      category: 'accounts',
      key: 'uid0_accounts',
      value: passwd
        .filter((p) => p.uid === 0)
        .map((p) => p.username)
        .join(','),
    });
  return items.map((i) => ({ ...i, value: i.value.slice(0, 4096) }));
}
