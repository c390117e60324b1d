import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { InterfaceIn } from './contract-inputs.ts';
import { listDir, readNumber, readTrimmed, type Roots } from './read.ts';

/**
 * Network interfaces from /sys/class/net (MAC, MTU, operstate, link speed, byte counters) with their addresses from
 * the kernel via os.networkInterfaces(). Speed is null where the driver reports none (loopback, virtual links, -1).
 */
export async function collectInterfaces(roots: Roots): Promise<InterfaceIn[]> {
  const base = join(roots.sys, 'class', 'net');
  const addrs = networkInterfaces();
  const names = new Set([...(await listDir(base)), ...Object.keys(addrs)]);
  const rows = await Promise.all(
    [...names].sort().map(async (name): Promise<InterfaceIn> => {
      const dir = join(base, name);
      const [mac, mtu, state, speed, rx, tx] = await Promise.all([
        readTrimmed(join(dir, 'address')),
        readNumber(join(dir, 'mtu')),
        readTrimmed(join(dir, 'operstate')),
        readNumber(join(dir, 'speed')),
        readNumber(join(dir, 'statistics', 'rx_bytes')),
        readNumber(join(dir, 'statistics', 'tx_bytes')),
      ]);
      const list = addrs[name] ?? [];
      const nodeMac = list.find((a) => a.mac !== '00:00:00:00:00:00')?.mac;
      return {
        name: name.slice(0, 64),
        mac_address: (mac ?? nodeMac ?? '').slice(0, 64),
        ipv4_addresses: list
          .filter((a) => a.family === 'IPv4')
          .map((a) => a.address)
          .slice(0, 64),
        ipv6_addresses: list
          .filter((a) => a.family === 'IPv6')
          .map((a) => a.address)
          .slice(0, 64),
        mtu: mtu !== null && mtu >= 0 ? mtu : null,
        state: (state ?? '').slice(0, 32),
        speed_mbps: speed !== null && speed >= 0 ? Math.trunc(speed) : null,
        rx_bytes: rx !== null && rx >= 0 ? rx : 0,
        tx_bytes: tx !== null && tx >= 0 ? tx : 0,
      };
    }),
  );
  return rows.slice(0, 1_000);
}
