// PLACEHOLDER (wip-agent): the real Linux collector is written on another branch and replaces this file at the merge.
// It only lets the agent run end to end until then: facts from node:os, a snapshot with facts only, two host samples.
import { arch, cpus, freemem, hostname, loadavg, release, totalmem } from 'node:os';
import type { Collector } from './types.ts';

const UNAME_ARCH: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64', ia32: 'i686', arm: 'armv7l' };

export function createLinuxCollector(): Collector {
  const facts = () => ({
    hostname: hostname(),
    os: process.platform,
    kernel_version: release(),
    arch: UNAME_ARCH[arch()] ?? arch(),
    cpu_cores: cpus().length,
    memory_total_bytes: totalmem(),
  });
  return {
    facts: async () => facts(),
    inventory: async (labels) => ({ collected_at: new Date().toISOString(), agent_version: '', facts: facts(), labels }),
    metrics: async () => ({
      collected_at: new Date().toISOString(),
      samples: [
        { name: 'host_load1', value: loadavg()[0] ?? 0 },
        { name: 'host_memory_available_bytes', value: freemem() },
      ],
    }),
    integrations: async () => [],
  };
}
