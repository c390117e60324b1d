import { join } from 'node:path';
import type { PortIn } from './contract-inputs.ts';
import { processName } from './processes.ts';
import { listDir, listPids, procPath, readLink, readText } from './read.ts';

export type SocketProtocol = 'tcp' | 'tcp6' | 'udp' | 'udp6';
export const SOCKET_PROTOCOLS: SocketProtocol[] = ['tcp', 'tcp6', 'udp', 'udp6'];

/** A socket line of /proc/net/{tcp,tcp6,udp,udp6}. */
export interface SocketEntry {
  protocol: SocketProtocol;
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  state: string;
  uid: number;
  inode: number;
}

const TCP_STATES: Record<string, string> = {
  '01': 'ESTABLISHED',
  '02': 'SYN_SENT',
  '03': 'SYN_RECV',
  '04': 'FIN_WAIT1',
  '05': 'FIN_WAIT2',
  '06': 'TIME_WAIT',
  '07': 'CLOSE',
  '08': 'CLOSE_WAIT',
  '09': 'LAST_ACK',
  '0A': 'LISTEN',
  '0B': 'CLOSING',
  '0C': 'NEW_SYN_RECV',
};
/** UDP has no connection states: 07 is a bound socket (ss calls it UNCONN), 01 a connected one. */
const UDP_STATES: Record<string, string> = { '07': 'UNCONN', '01': 'ESTABLISHED' };

/** The kernel prints addresses as host-order 32-bit words in hex: little-endian on every Linux architecture we target. */
function word(hex: string): number[] {
  return [hex.slice(6, 8), hex.slice(4, 6), hex.slice(2, 4), hex.slice(0, 2)].map((b) => parseInt(b, 16));
}

/** Compressed IPv6 text (RFC 5952): lower-case, longest zero run as `::`, IPv4-mapped as `::ffff:a.b.c.d`. */
export function formatIpv6(bytes: number[]): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return `::ffff:${bytes.slice(12).join('.')}`;
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** `0100007F:1F90` → 127.0.0.1, 8080; 32 hex digits for IPv6. */
export function parseSocketAddress(text: string): { address: string; port: number } {
  const [hex = '', port = '0'] = text.split(':');
  let address: string;
  if (hex.length === 8) address = word(hex).join('.');
  else {
    const bytes: number[] = [];
    for (let i = 0; i < 32; i += 8) bytes.push(...word(hex.slice(i, i + 8)));
    address = formatIpv6(bytes);
  }
  return { address, port: parseInt(port, 16) };
}

export function parseNetSockets(protocol: SocketProtocol, text: string): SocketEntry[] {
  const out: SocketEntry[] = [];
  const udp = protocol.startsWith('udp');
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const local = parseSocketAddress(f[1]!);
    const remote = parseSocketAddress(f[2]!);
    const code = f[3]!.toUpperCase();
    out.push({
      protocol,
      localAddress: local.address,
      localPort: local.port,
      remoteAddress: remote.address,
      remotePort: remote.port,
      state: (udp ? UDP_STATES[code] : TCP_STATES[code]) ?? code,
      uid: Number(f[7]),
      inode: Number(f[9]),
    });
  }
  return out;
}

/** Listening TCP sockets and every bound UDP socket: what the host offers, not its outgoing connections. */
export const isOffered = (s: SocketEntry): boolean =>
  s.protocol.startsWith('tcp') ? s.state === 'LISTEN' : s.localPort !== 0;

export async function readSockets(
  proc: string,
  protocols: SocketProtocol[] = SOCKET_PROTOCOLS,
): Promise<SocketEntry[]> {
  const texts = await Promise.all(protocols.map((p) => readText(join(proc, 'net', p))));
  return texts.flatMap((t, i) => (t === null ? [] : parseNetSockets(protocols[i]!, t)));
}

/** Socket inodes a process holds, from the `socket:[inode]` links in /proc/[pid]/fd (unreadable → none). */
export async function socketInodesOf(proc: string, pid: number): Promise<number[]> {
  const dir = procPath(proc, pid, 'fd');
  const links = await Promise.all((await listDir(dir)).map((fd) => readLink(join(dir, fd))));
  const out: number[] = [];
  for (const l of links) {
    const m = l === null ? null : /^socket:\[(\d+)\]$/.exec(l);
    if (m) out.push(Number(m[1]));
  }
  return out;
}

/** inode → owning pid, for the inodes asked about (the first process found wins when a socket is shared). */
export async function socketOwners(proc: string, wanted: Set<number>, pids?: number[]): Promise<Map<number, number>> {
  const owners = new Map<number, number>();
  if (wanted.size === 0) return owners;
  const list = pids ?? (await listPids(proc));
  const inodes = await Promise.all(list.map((pid) => socketInodesOf(proc, pid)));
  list.forEach((pid, i) => {
    for (const inode of inodes[i]!) if (wanted.has(inode) && !owners.has(inode)) owners.set(inode, pid);
  });
  return owners;
}

/** Offered ports with the owning process where /proc/[pid]/fd is readable (root sees all; others only their own). */
export async function collectPorts(proc: string): Promise<PortIn[]> {
  const sockets = (await readSockets(proc)).filter(isOffered);
  const owners = await socketOwners(proc, new Set(sockets.map((s) => s.inode).filter((i) => i > 0)));
  const pids = [...new Set(owners.values())];
  const names = new Map(
    await Promise.all(
      pids.map(async (pid) => {
        const [comm, cmdline] = await Promise.all([
          readText(procPath(proc, pid, 'comm')),
          readText(procPath(proc, pid, 'cmdline')),
        ]);
        return [pid, processName((comm ?? '').trim(), (cmdline ?? '').split('\0'))] as const;
      }),
    ),
  );
  return sockets.slice(0, 10_000).map((s) => {
    const pid = owners.get(s.inode) ?? null;
    return {
      protocol: s.protocol,
      local_address: s.localAddress,
      local_port: s.localPort,
      remote_address: s.remotePort === 0 ? '' : s.remoteAddress,
      remote_port: s.remotePort,
      state: s.state,
      pid,
      process_name: pid === null ? '' : (names.get(pid) ?? ''),
    };
  });
}
