import { join } from 'node:path';
import type { UserIn } from './contract-inputs.ts';
import { readText, type Roots } from './read.ts';

export interface PasswdEntry {
  username: string;
  uid: number;
  gid: number;
  gecos: string;
  home: string;
  shell: string;
}

/** /etc/passwd: name:password:uid:gid:gecos:home:shell; NIS `+`/`-` lines and malformed lines are skipped. */
export function parsePasswd(text: string): PasswdEntry[] {
  const out: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('+') || line.startsWith('-')) continue;
    const f = line.split(':');
    if (f.length < 7 || !/^\d+$/.test(f[2]!) || !/^\d+$/.test(f[3]!)) continue;
    out.push({
      username: f[0]!,
      uid: Number(f[2]),
      gid: Number(f[3]),
      gecos: f[4]!,
      home: f[5]!,
      shell: f.slice(6).join(':'),
    });
  }
  return out;
}

export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

/** /etc/group: name:password:gid:member,member. */
export function parseGroup(text: string): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('+') || line.startsWith('-')) continue;
    const f = line.split(':');
    if (f.length < 4 || !/^\d+$/.test(f[2]!)) continue;
    out.push({
      name: f[0]!,
      gid: Number(f[2]),
      members: f[3]!
        .split(',')
        .map((m) => m.trim())
        .filter((m) => m !== ''),
    });
  }
  return out;
}

export async function readPasswd(etc: string): Promise<PasswdEntry[]> {
  const text = await readText(join(etc, 'passwd'));
  return text === null ? [] : parsePasswd(text);
}

/** uid → user name, for processes and ports. */
export const userNameMap = (entries: PasswdEntry[]): Map<number, string> => {
  const map = new Map<number, string>();
  for (const e of entries) if (!map.has(e.uid)) map.set(e.uid, e.username);
  return map;
};

/** A system account: uid below 1000 (Debian/RHEL UID_MIN) or nobody (65534). */
export const isSystemUid = (uid: number): boolean => uid < 1000 || uid === 65534;

/** Users with their groups: the primary group (by gid) first, then every group listing them as a member. */
export function buildUsers(passwd: PasswdEntry[], groups: GroupEntry[]): UserIn[] {
  const byGid = new Map(groups.map((g) => [g.gid, g.name]));
  return passwd.map((p) => {
    const names = new Set<string>();
    const primary = byGid.get(p.gid);
    if (primary) names.add(primary);
    for (const g of groups) if (g.members.includes(p.username)) names.add(g.name);
    return {
      username: p.username.slice(0, 255),
      uid: p.uid,
      gid: p.gid,
      home: p.home.slice(0, 1024),
      shell: p.shell.slice(0, 1024),
      gecos: p.gecos.slice(0, 1024),
      is_system: isSystemUid(p.uid),
      groups: [...names].slice(0, 256),
    };
  });
}

export async function collectUsers(roots: Roots, passwd?: PasswdEntry[]): Promise<UserIn[]> {
  const [p, g] = await Promise.all([passwd ?? readPasswd(roots.etc), readText(join(roots.etc, 'group'))]);
  return buildUsers(p, g === null ? [] : parseGroup(g));
}
