import { InventorySnapshot } from '../../contracts/domains/agent-telemetry.ts';
import { AGENT_VERSION } from '../version.ts';
import { collectCertificates } from './certificates.ts';
import { collectContainers, DEFAULT_ENGINES, findEngine, type Engine } from './containers.ts';
import { collectCronJobs } from './cron.ts';
import { collectFacts } from './facts.ts';
import { collectFirewall } from './firewall.ts';
import { collectGpus } from './gpu.ts';
import { collectIntegrations, type IntegrationCredentials } from './integrations.ts';
import { collectInterfaces } from './interfaces.ts';
import { collectKernelModules } from './kernel-modules.ts';
import { MetricsCollector } from './metrics.ts';
import { collectPackages } from './packages.ts';
import { collectPorts } from './ports.ts';
import { collectProcesses, ProcessCpuTracker } from './processes.ts';
import { DEFAULT_ROOTS, orElse, type Roots } from './read.ts';
import { collectSecurityItems } from './security.ts';
import { collectServices } from './services.ts';
import type { Collector } from './types.ts';
import { collectUsers, readPasswd, userNameMap } from './users.ts';

export interface LinuxCollectorOptions {
  procRoot?: string;
  sysRoot?: string;
  etcRoot?: string;
  /** /var (dpkg status, cron spool). */
  varRoot?: string;
  /** Reported as `agent_version` in snapshots. */
  agentVersion?: string;
  /** Container engine sockets to look for (default: Docker's, then Podman's). */
  engines?: Engine[];
  /** Certificate directories besides /etc/ssl/certs, /etc/pki/tls/certs and /etc/letsencrypt/live (default: /usr/local/share/ca-certificates). */
  certificateDirs?: string[];
  /** Credentials for probing services that need them. */
  credentials?: IntegrationCredentials;
  /** systemd's runtime directory: its presence means systemd is the init system (sd_booted). */
  systemdRuntimeDir?: string;
}

export { AGENT_VERSION };

/** Reads the Linux machine the agent runs on (see agent/collect/*.ts for each source). */
export function createLinuxCollector(opts: LinuxCollectorOptions = {}): Collector {
  const roots: Roots = {
    proc: opts.procRoot ?? DEFAULT_ROOTS.proc,
    sys: opts.sysRoot ?? DEFAULT_ROOTS.sys,
    etc: opts.etcRoot ?? DEFAULT_ROOTS.etc,
    var: opts.varRoot ?? DEFAULT_ROOTS.var,
  };
  const engines = opts.engines ?? DEFAULT_ENGINES;
  const systemd = opts.systemdRuntimeDir ?? '/run/systemd/system';
  const engine = () => findEngine(engines);
  const processCpu = new ProcessCpuTracker();
  const metrics = new MetricsCollector(roots, engine);
  const facts = () => collectFacts(roots);

  return {
    facts,
    async inventory(labels) {
      const passwd = await orElse(() => readPasswd(roots.etc), []);
      const names = userNameMap(passwd);
      const [
        f,
        processes,
        services,
        packages,
        ports,
        interfaces,
        users,
        cron_jobs,
        gpu_devices,
        firewall_rules,
        certificates,
        kernel_modules,
        security_items,
        containers,
        integrations,
      ] = await Promise.all([
        facts(),
        orElse(() => collectProcesses(roots, processCpu, names), []),
        orElse(() => collectServices(systemd), []),
        orElse(() => collectPackages(roots), []),
        orElse(() => collectPorts(roots.proc), []),
        orElse(() => collectInterfaces(roots), []),
        orElse(() => collectUsers(roots, passwd), []),
        orElse(() => collectCronJobs(roots, systemd), []),
        orElse(() => collectGpus(roots), []),
        orElse(() => collectFirewall(), []),
        orElse(() => collectCertificates(roots, opts.certificateDirs), []),
        orElse(() => collectKernelModules(roots.proc), []),
        orElse(() => collectSecurityItems(roots, passwd), []),
        orElse(() => collectContainers(engine()), []),
        orElse(() => collectIntegrations(roots, true, opts.credentials, engines), []),
      ]);
      const snapshot = {
        collected_at: new Date().toISOString(),
        agent_version: opts.agentVersion ?? AGENT_VERSION,
        facts: f,
        labels,
        processes: processes.slice(0, 10_000),
        services,
        packages,
        ports,
        interfaces,
        users: users.slice(0, 10_000),
        cron_jobs,
        gpu_devices,
        firewall_rules,
        certificates,
        kernel_modules,
        security_items: security_items.slice(0, 5_000),
        containers,
        integrations,
      };
      // Fail here, on the agent, rather than have the server dead-letter a snapshot a collector got wrong.
      InventorySnapshot.parse(snapshot);
      return snapshot;
    },
    async metrics() {
      return { collected_at: new Date().toISOString(), samples: (await metrics.collect()).slice(0, 20_000) };
    },
    integrations(withConfig) {
      return orElse(() => collectIntegrations(roots, withConfig, opts.credentials, engines), []);
    },
  };
}
