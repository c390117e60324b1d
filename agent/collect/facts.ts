import { arch, cpus, hostname, networkInterfaces, release } from 'node:os';
import { join } from 'node:path';
import type { FactsIn } from './contract-inputs.ts';
import { memTotalBytes, readText, type Roots } from './read.ts';

/** /etc/os-release (shell-style KEY=value, values optionally quoted). */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!m) continue;
    out[m[1]!] = m[2]!.replace(/^(["'])(.*)\1$/, '$2').replace(/\\(.)/g, '$1');
  }
  return out;
}

const ARCH: Record<string, string> = {
  x64: 'x86_64',
  arm64: 'aarch64',
  ia32: 'i686',
  arm: 'armv7l',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

/** The interface of the IPv4 default route with the lowest metric (/proc/net/route: destination and mask 0, RTF_UP). */
export function defaultRouteInterface(routeText: string): string | null {
  let best: { iface: string; metric: number } | null = null;
  for (const line of routeText.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const [iface, dest, , flags, , , metric, mask] = f;
    if (dest !== '00000000' || mask !== '00000000' || (parseInt(flags!, 16) & 1) === 0) continue;
    const m = Number(metric);
    if (!best || m < best.metric) best = { iface: iface!, metric: m };
  }
  return best?.iface ?? null;
}

/** The default route's source address; else the first non-loopback IPv4; else the first non-loopback IPv6; else ''. */
export async function primaryAddress(proc: string): Promise<string> {
  const nics = networkInterfaces();
  const routes = await readText(join(proc, 'net', 'route'));
  const iface = routes === null ? null : defaultRouteInterface(routes);
  const v4 = (name: string) => nics[name]?.find((a) => a.family === 'IPv4' && !a.internal)?.address;
  if (iface) {
    const a = v4(iface);
    if (a) return a;
  }
  for (const name of Object.keys(nics)) {
    const a = v4(name);
    if (a) return a;
  }
  for (const list of Object.values(nics)) {
    const a = list?.find((x) => x.family === 'IPv6' && !x.internal && !x.address.startsWith('fe80'));
    if (a) return a.address;
  }
  return '';
}

export async function collectFacts(roots: Roots): Promise<FactsIn> {
  const [osRelease, ip, memory] = await Promise.all([
    readText(join(roots.etc, 'os-release')),
    primaryAddress(roots.proc),
    memTotalBytes(roots.proc),
  ]);
  const os = osRelease === null ? {} : parseOsRelease(osRelease);
  return {
    hostname: hostname().slice(0, 255) || 'localhost',
    ip_address: ip,
    os: (os.ID ?? os.NAME ?? 'linux').slice(0, 64),
    os_version: (os.VERSION_ID ?? '').slice(0, 128),
    kernel_version: release().slice(0, 128),
    arch: ARCH[arch()] ?? arch(),
    cpu_cores: cpus().length,
    memory_total_bytes: memory,
  };
}
