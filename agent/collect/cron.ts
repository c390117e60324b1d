import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CronJobIn } from './contract-inputs.ts';
import { listDir, readText, run, type Roots } from './read.ts';
import { parseSystemctlShow } from './services.ts';

const ENV_LINE = /^[A-Za-z_][A-Za-z0-9_]*\s*=/;

/**
 * Crontab lines: `m h dom mon dow [user] command` or `@keyword [user] command`; the user column exists only in
 * system crontabs (/etc/crontab, /etc/cron.d/*). Blank lines, comments and environment assignments are skipped.
 */
export function parseCrontab(text: string, source: string, owner: string | null): CronJobIn[] {
  const out: CronJobIn[] = [];
  const userColumn = owner === null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || ENV_LINE.test(line)) continue;
    const f = line.split(/\s+/);
    const timeFields = f[0]!.startsWith('@') ? 1 : 5;
    const need = timeFields + (userColumn ? 2 : 1);
    if (f.length < need) continue;
    const schedule = f.slice(0, timeFields).join(' ');
    const username = userColumn ? f[timeFields]! : owner;
    // The command keeps its own spacing: cut the line after the schedule (and user) tokens.
    const rest = line.replace(new RegExp(`^(?:\\S+\\s+){${need - 1}}`), '');
    out.push({
      username: username.slice(0, 255),
      schedule: schedule.slice(0, 255),
      command: rest.slice(0, 4096),
      source: source.slice(0, 1024),
      is_active: true,
    });
  }
  return out;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** Per-user crontabs: /var/spool/cron/crontabs/<user> (Debian) or /var/spool/cron/<user> (RHEL); readable as root. */
async function userCrontabs(roots: Roots): Promise<CronJobIn[]> {
  const debian = join(roots.var, 'spool', 'cron', 'crontabs');
  const dir = existsSync(debian) ? debian : join(roots.var, 'spool', 'cron');
  const out: CronJobIn[] = [];
  for (const user of (await listDir(dir)).sort()) {
    const path = join(dir, user);
    if (user.startsWith('.') || !(await isFile(path))) continue;
    const text = await readText(path);
    if (text !== null) out.push(...parseCrontab(text, `crontab:${user}`, user));
  }
  return out;
}

/** /etc/crontab and /etc/cron.d/* (run-parts rules: names with a dot, e.g. backups `foo.dpkg-old`, are ignored). */
async function systemCrontabs(roots: Roots): Promise<CronJobIn[]> {
  const out: CronJobIn[] = [];
  const main = join(roots.etc, 'crontab');
  const text = await readText(main);
  if (text !== null) out.push(...parseCrontab(text, '/etc/crontab', null));
  const dir = join(roots.etc, 'cron.d');
  for (const name of (await listDir(dir)).sort()) {
    if (!/^[A-Za-z0-9_-]+$/.test(name)) continue;
    const t = await readText(join(dir, name));
    if (t !== null) out.push(...parseCrontab(t, `/etc/cron.d/${name}`, null));
  }
  return out;
}

/** `TimersCalendar={ OnCalendar=*-*-* 06:00:00 ; next_elapse=... }` (and TimersMonotonic) → `OnCalendar=*-*-* 06:00:00`. */
export function timerSchedule(unit: Record<string, string>): string {
  const parts: string[] = [];
  for (const key of ['TimersCalendar', 'TimersMonotonic']) {
    for (const m of (unit[key] ?? '').matchAll(/\{\s*(On\w+)=([^;]*?)\s*;/g)) parts.push(`${m[1]}=${m[2]}`);
  }
  return parts.join('; ');
}

/** systemd timers (with systemd as init only): schedule from OnCalendar/OnBootSec..., command = the unit it starts. */
async function systemdTimers(systemdRuntimeDir: string): Promise<CronJobIn[]> {
  if (!existsSync(systemdRuntimeDir)) return [];
  const list = await run('systemctl', ['list-units', '--type=timer', '--all', '--no-legend', '--plain', '--no-pager']);
  if (list?.code !== 0) return [];
  const names = list.stdout
    .split('\n')
    .map(
      (l) =>
        l
          .replace(/^[\s●*×]+/u, '')
          .trim()
          .split(/\s+/)[0] ?? '',
    )
    .filter((n) => n.endsWith('.timer'));
  if (names.length === 0) return [];
  const show = await run('systemctl', [
    'show',
    '--no-pager',
    '-p',
    'Id,ActiveState,TimersCalendar,TimersMonotonic,Triggers',
    '--',
    ...names,
  ]);
  if (show?.code !== 0) return [];
  return parseSystemctlShow(show.stdout)
    .filter((u) => u.Id)
    .map((u) => ({
      username: 'root',
      schedule: (timerSchedule(u) || 'unknown').slice(0, 255),
      command: (u.Triggers ?? '').slice(0, 4096),
      source: `systemd-timer:${u.Id}`.slice(0, 1024),
      is_active: u.ActiveState === 'active',
    }));
}

export async function collectCronJobs(roots: Roots, systemdRuntimeDir = '/run/systemd/system'): Promise<CronJobIn[]> {
  const parts = await Promise.all([userCrontabs(roots), systemCrontabs(roots), systemdTimers(systemdRuntimeDir)]);
  return parts.flat().slice(0, 5_000);
}
