import { join } from 'node:path';
import type { KernelModuleIn } from './contract-inputs.ts';
import { readText } from './read.ts';

/** /proc/modules: `name size instances used_by|- state address`; used_by is a comma list ending with a comma, or `-`. */
export function parseProcModules(text: string): KernelModuleIn[] {
  const out: KernelModuleIn[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || !/^\d+$/.test(f[1]!) || !/^\d+$/.test(f[2]!)) continue;
    out.push({
      name: f[0]!.slice(0, 128),
      size_bytes: Number(f[1]),
      instances: Number(f[2]),
      used_by:
        f[3] === '-'
          ? []
          : f[3]!
              .split(',')
              .filter((m) => m !== '')
              .map((m) => m.slice(0, 128))
              .slice(0, 256),
    });
  }
  return out;
}

/** Loaded modules; empty where /proc/modules is absent (a kernel without modules, some containers and microVMs). */
export async function collectKernelModules(proc: string): Promise<KernelModuleIn[]> {
  const text = await readText(join(proc, 'modules'));
  return text === null ? [] : parseProcModules(text).slice(0, 5_000);
}
