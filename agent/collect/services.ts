import { existsSync } from 'node:fs';
import type { ServiceIn } from './contract-inputs.ts';
import { run } from './read.ts';

/** `systemctl show -p ...` output: one `Key=value` block per unit, blocks separated by a blank line. */
export function parseSystemctlShow(text: string): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  let cur: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (Object.keys(cur).length > 0) out.push(cur);
      cur = {};
      continue;
    }
    const eq = line.indexOf('=');
    if (eq > 0) cur[line.slice(0, eq)] = line.slice(eq + 1);
  }
  if (Object.keys(cur).length > 0) out.push(cur);
  return out;
}

/** First column of `systemctl list-units|list-unit-files --no-legend --plain` (a leading status bullet is dropped). */
export function parseUnitList(text: string): { name: string; rest: string[] }[] {
  const out: { name: string; rest: string[] }[] = [];
  for (const raw of text.split('\n')) {
    const f = raw
      .replace(/^[\s●*×]+/u, '')
      .trim()
      .split(/\s+/);
    if (!f[0] || !f[0].endsWith('.service')) continue;
    out.push({ name: f[0], rest: f.slice(1) });
  }
  return out;
}

/** Unit file state → enabled: true when it starts at boot, false when disabled or masked, null when not applicable. */
export function unitFileEnabled(state: string | undefined): boolean | null {
  if (!state) return null;
  if (['enabled', 'enabled-runtime', 'alias', 'linked', 'linked-runtime'].includes(state)) return true;
  if (['disabled', 'masked', 'masked-runtime'].includes(state)) return false;
  return null;
}

const name = (unit: string) => unit.replace(/\.service$/, '');

/**
 * systemd services: the loaded units (with states and main pid from one `systemctl show`), plus installed unit files
 * that are not loaded (inactive). Without systemd as the init system (no /run/systemd/system, e.g. a container or a
 * sandbox), the list is empty: other init systems are not reported.
 */
export async function collectServices(systemdRuntimeDir = '/run/systemd/system'): Promise<ServiceIn[]> {
  if (!existsSync(systemdRuntimeDir)) return [];
  const [units, files] = await Promise.all([
    run('systemctl', ['list-units', '--type=service', '--all', '--no-legend', '--plain', '--no-pager']),
    run('systemctl', ['list-unit-files', '--type=service', '--no-legend', '--plain', '--no-pager']),
  ]);
  if (!units || units.code !== 0) return [];
  const loaded = parseUnitList(units.stdout).map((u) => u.name);
  const show =
    loaded.length === 0
      ? null
      : await run('systemctl', [
          'show',
          '--no-pager',
          '-p',
          'Id,Description,LoadState,ActiveState,SubState,UnitFileState,MainPID',
          '--',
          ...loaded,
        ]);
  const out: ServiceIn[] = [];
  const seen = new Set<string>();
  for (const u of show?.code === 0 ? parseSystemctlShow(show.stdout) : []) {
    if (!u.Id || seen.has(u.Id)) continue;
    seen.add(u.Id);
    const pid = Number(u.MainPID);
    out.push({
      name: name(u.Id).slice(0, 255),
      description: (u.Description ?? '').slice(0, 1024),
      load_state: (u.LoadState ?? '').slice(0, 32),
      active_state: (u.ActiveState ?? 'unknown').slice(0, 32),
      sub_state: (u.SubState ?? '').slice(0, 32),
      enabled: unitFileEnabled(u.UnitFileState),
      main_pid: Number.isInteger(pid) && pid > 0 ? pid : null,
      manager: 'systemd',
    });
  }
  for (const f of files?.code === 0 ? parseUnitList(files.stdout) : []) {
    // Templates (foo@.service) are not services by themselves; their instances are loaded units above.
    if (seen.has(f.name) || f.name.includes('@.')) continue;
    seen.add(f.name);
    out.push({
      name: name(f.name).slice(0, 255),
      load_state: 'not-loaded',
      active_state: 'inactive',
      sub_state: 'dead',
      enabled: unitFileEnabled(f.rest[0]),
      manager: 'systemd',
    });
  }
  return out.slice(0, 5_000);
}
