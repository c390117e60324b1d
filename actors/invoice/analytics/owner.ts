import { Svcm } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Config } from '../../../platform/config.ts';
import { namespace, wireRequestSubject } from '../../../platform/namespace.ts';

/**
 * Who may open the embedded analytics store. chDB keeps its data in one process and locks its directory, so exactly
 * one process opens it: the one that runs the invoice domain (which also applies the analytics DDL at start-up).
 * Every other process (gateways, other domains, `npm run migrate`, the bench) reaches analytics data only through the
 * invoice domain's subjects. Several invoice instances need a ClickHouse server (SVC_CLICKHOUSE_URL).
 */

/** No ClickHouse server configured: the analytics store is chDB inside the invoice process. */
export const usesEmbeddedAnalytics = (config: Pick<Config, 'SVC_CLICKHOUSE_URL'>): boolean =>
  !config.SVC_CLICKHOUSE_URL;

/** SVC_ACTORS selects the invoice domain (`invoice` or `all`; `none` selects nothing), the analytics store's owner. */
export function runsInvoiceDomain(config: Pick<Config, 'SVC_ACTORS'>): boolean {
  const names = config.SVC_ACTORS;
  return !names.includes('none') && (names.includes('all') || names.includes('invoice'));
}

export class AnalyticsOwnershipError extends Error {
  override name = 'AnalyticsOwnershipError';
}

export const NOT_OWNER_MESSAGE =
  'the embedded analytics store (chDB) is opened only by the process that runs the invoice domain (SVC_ACTORS with invoice or all); ' +
  'other processes ask it through svc.invoice.* subjects, or all use a ClickHouse server (SVC_CLICKHOUSE_URL)';

export const SECOND_INSTANCE_MESSAGE =
  'another invoice actor instance already serves this system with the embedded analytics store (chDB), which only one process can hold: ' +
  'more than one invoice instance needs a ClickHouse server; set SVC_CLICKHOUSE_URL for every invoice process';

/**
 * How many instances of the actor `service` already serve `subject` in this process's namespace, asked with
 * `$SRV.INFO.<service>` (the NATS micro-services discovery every actor answers). Systems in other namespaces share the
 * service name on one broker, so only instances whose endpoint is this namespace's wire subject count.
 */
export async function countServingInstances(
  nc: NatsConnection,
  service: string,
  subject: string,
  waitMs = 2000,
): Promise<number> {
  const wire = wireRequestSubject(subject);
  const ids = new Set<string>();
  try {
    // `stall`: stop 300 ms after the last answer rather than always waiting the whole `waitMs`.
    const answers = await new Svcm(nc).client({ strategy: 'stall', maxWait: waitMs, stall: 300 }).info(service);
    for await (const info of answers) {
      if (info.endpoints.some((e) => e.subject === wire)) ids.add(info.id);
    }
  } catch (err) {
    // Nobody subscribed to the discovery subject: no instance at all.
    if (isNoResponders(err)) return 0;
    throw err;
  }
  return ids.size;
}

/** Refuses to start a second invoice instance on chDB (call before opening the store). */
export async function refuseSecondEmbeddedInstance(
  nc: NatsConnection,
  service: string,
  subject: string,
): Promise<void> {
  const others = await countServingInstances(nc, service, subject);
  if (others > 0) {
    const ns = namespace();
    throw new AnalyticsOwnershipError(
      `${SECOND_INSTANCE_MESSAGE} (${others} already serving${ns ? ` in namespace ${ns}` : ''})`,
    );
  }
}

function isNoResponders(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (/no responders/i.test(e.message)) return true;
  return false;
}
