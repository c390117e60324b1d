import { basename, join } from 'node:path';
import type { GpuIn } from './contract-inputs.ts';
import { listDir, readLink, readNumber, readText, readTrimmed, run, type Roots } from './read.ts';

/** Discrete GPU vendors; Intel (0x8086) is left out since nearly all of its display controllers are integrated. */
const VENDORS: Record<string, string> = { '0x10de': 'NVIDIA', '0x1002': 'AMD' };

/** `nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(
  text: string,
): { index: number; name: string; driver: string; memoryMiB: number | null; busId: string }[] {
  return text
    .split('\n')
    .map((l) => l.split(',').map((f) => f.trim()))
    .filter((f) => f.length >= 5 && /^\d+$/.test(f[0]!))
    .map((f) => ({
      index: Number(f[0]),
      name: f[1]!,
      driver: f[2]!,
      memoryMiB: /^\d+$/.test(f[3]!) ? Number(f[3]) : null,
      busId: f[4]!,
    }));
}

/** nvidia-smi prints `00000000:01:00.0`; sysfs names the device `0000:01:00.0`. */
const shortBusId = (id: string): string => id.toLowerCase().replace(/^0000(?=[0-9a-f]{4}:)/, '');

/**
 * Discrete GPUs: PCI display controllers (class 0x03xxxx) of NVIDIA or AMD from /sys/bus/pci/devices, with names,
 * memory and driver version from nvidia-smi when present (AMD: VRAM size from amdgpu's mem_info_vram_total).
 */
export async function collectGpus(roots: Roots): Promise<GpuIn[]> {
  const base = join(roots.sys, 'bus', 'pci', 'devices');
  const found: { bus: string; vendor: string; device: string; driver: string; vram: number | null }[] = [];
  for (const bus of (await listDir(base)).sort()) {
    const dir = join(base, bus);
    const [cls, vendor] = await Promise.all([readTrimmed(join(dir, 'class')), readTrimmed(join(dir, 'vendor'))]);
    if (!cls?.startsWith('0x03') || !vendor || !VENDORS[vendor]) continue;
    const [device, driverLink, vram] = await Promise.all([
      readTrimmed(join(dir, 'device')),
      readLink(join(dir, 'driver')),
      readNumber(join(dir, 'mem_info_vram_total')),
    ]);
    found.push({ bus, vendor, device: device ?? '', driver: driverLink ? basename(driverLink) : '', vram });
  }
  if (found.length === 0) return [];
  const smi = found.some((g) => g.vendor === '0x10de')
    ? await run(
        'nvidia-smi',
        ['--query-gpu=index,name,driver_version,memory.total,pci.bus_id', '--format=csv,noheader,nounits'],
        3_000,
      )
    : null;
  const nvidia = smi?.code === 0 ? parseNvidiaSmi(smi.stdout) : [];
  const out: GpuIn[] = [];
  for (const [i, g] of found.entries()) {
    const s = nvidia.find((n) => shortBusId(n.busId) === g.bus.toLowerCase());
    const driverVersion =
      s?.driver ??
      (g.driver ? (await readText(join(roots.sys, 'module', g.driver, 'version')))?.trim() : undefined) ??
      '';
    out.push({
      device_index: s?.index ?? i,
      name: (s?.name ?? `${VENDORS[g.vendor]} device ${g.device}`).slice(0, 255),
      vendor: VENDORS[g.vendor]!,
      driver_version: driverVersion.slice(0, 128),
      memory_total_bytes: s?.memoryMiB != null ? s.memoryMiB * 1024 * 1024 : g.vram,
      pci_bus_id: g.bus.slice(0, 64),
      architecture: '',
    });
  }
  return out.slice(0, 64);
}
