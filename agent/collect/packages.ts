import { join } from 'node:path';
import type { PackageIn } from './contract-inputs.ts';
import { readText, run, type Roots } from './read.ts';

/** Splits a deb822 file (dpkg status) into stanzas of field → value; continuation lines are appended to the field. */
export function parseDeb822(text: string): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  let cur: Record<string, string> = {};
  let last = '';
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (Object.keys(cur).length > 0) out.push(cur);
      cur = {};
      last = '';
    } else if (line.startsWith(' ') || line.startsWith('\t')) {
      if (last) cur[last] += `\n${line.slice(1)}`;
    } else {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      last = line.slice(0, colon);
      cur[last] = line.slice(colon + 1).trim();
    }
  }
  if (Object.keys(cur).length > 0) out.push(cur);
  return out;
}

/**
 * Installed packages from /var/lib/dpkg/status: stanzas whose Status ends in `installed` (`install ok installed`,
 * `hold ok installed`); half-installed, config-files-only and removed packages are left out. Installed-Size is KiB.
 */
export function parseDpkgStatus(text: string): PackageIn[] {
  const out: PackageIn[] = [];
  for (const s of parseDeb822(text)) {
    const status = (s.Status ?? '').split(/\s+/);
    if (!s.Package || !s.Version || status[2] !== 'installed') continue;
    const size = Number(s['Installed-Size']);
    out.push({
      name: s.Package.slice(0, 255),
      version: s.Version.slice(0, 255),
      architecture: (s.Architecture ?? '').slice(0, 32),
      manager: 'dpkg',
      description: (s.Description ?? '').split('\n')[0]!.slice(0, 1024),
      installed_size_bytes:
        s['Installed-Size'] !== undefined && Number.isInteger(size) && size >= 0 ? size * 1024 : null,
    });
  }
  return out;
}

const RPM_FORMAT = '%{NAME}\\t%{VERSION}-%{RELEASE}\\t%{ARCH}\\t%{SIZE}\\t%{SUMMARY}\\n';

/** `rpm -qa --queryformat RPM_FORMAT`: name, version-release, arch, size in bytes, summary, tab-separated. */
export function parseRpmList(text: string): PackageIn[] {
  const out: PackageIn[] = [];
  for (const line of text.split('\n')) {
    const [name, version, arch, size, summary] = line.split('\t');
    if (!name || !version) continue;
    const bytes = Number(size);
    out.push({
      name: name.slice(0, 255),
      version: version.slice(0, 255),
      architecture: arch === '(none)' ? '' : (arch ?? '').slice(0, 32),
      manager: 'rpm',
      description: (summary ?? '').slice(0, 1024),
      installed_size_bytes: Number.isInteger(bytes) && bytes >= 0 ? bytes : null,
    });
  }
  return out;
}

/** dpkg's status file read directly; on RPM systems (no dpkg database) `rpm -qa`, since its database needs rpm(8). */
export async function collectPackages(roots: Roots): Promise<PackageIn[]> {
  const text = await readText(join(roots.var, 'lib', 'dpkg', 'status'));
  if (text !== null) return parseDpkgStatus(text).slice(0, 20_000);
  const rpm = await run('rpm', ['-qa', '--queryformat', RPM_FORMAT], 10_000);
  return rpm?.code === 0 ? parseRpmList(rpm.stdout).slice(0, 20_000) : [];
}
