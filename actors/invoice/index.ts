import type { DomainContext, DomainHandle, DomainModule } from '../domain.ts';

/** Invoicing: preparation, editing, review, rendering, accounting sync. */
export const invoiceDomain: DomainModule = {
  name: 'invoice',
  async start(dc: DomainContext): Promise<DomainHandle> {
    const analytics = await dc.stores.analytics();
    await dc.host.serve('invoice', 'invoice-health', {
      'svc.invoice.health': async () => {
        try {
          await analytics.ping();
          return { analytics_store: 'ok' };
        } catch (err) {
          return { analytics_store: `unreachable: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300) };
        }
      },
    });
    return { stop: async () => undefined };
  },
};
