import type { z } from 'zod';
import type {
  CertificateRecord,
  ContainerRecord,
  CronJobRecord,
  FirewallRuleRecord,
  GpuDeviceRecord,
  HostFacts,
  IntegrationConfigValue,
  IntegrationReport,
  InterfaceRecord,
  KernelModuleRecord,
  MetricSample,
  PackageRecord,
  PortRecord,
  ProcessRecord,
  SecurityItemRecord,
  ServiceRecord,
  SystemUserRecord,
} from '../../contracts/domains/agent-telemetry.ts';

/** What each collector produces: the contract's input shapes (defaults filled in by the schema). */
export type FactsIn = z.input<typeof HostFacts>;
export type ProcessIn = z.input<typeof ProcessRecord>;
export type ServiceIn = z.input<typeof ServiceRecord>;
export type PackageIn = z.input<typeof PackageRecord>;
export type PortIn = z.input<typeof PortRecord>;
export type InterfaceIn = z.input<typeof InterfaceRecord>;
export type UserIn = z.input<typeof SystemUserRecord>;
export type CronJobIn = z.input<typeof CronJobRecord>;
export type GpuIn = z.input<typeof GpuDeviceRecord>;
export type FirewallRuleIn = z.input<typeof FirewallRuleRecord>;
export type CertificateIn = z.input<typeof CertificateRecord>;
export type KernelModuleIn = z.input<typeof KernelModuleRecord>;
export type SecurityItemIn = z.input<typeof SecurityItemRecord>;
export type ContainerIn = z.input<typeof ContainerRecord>;
export type IntegrationIn = z.input<typeof IntegrationReport>;
export type ConfigValueIn = z.input<typeof IntegrationConfigValue>;
export type SampleIn = z.input<typeof MetricSample>;
