import { migrateAnalytics } from './analytics/migrations/runner.ts';
import type { DomainContext, DomainHandle, DomainModule } from '../../platform/domain.ts';
import { analyticsStore } from './analytics/open.ts';
import { refuseSecondEmbeddedInstance, usesEmbeddedAnalytics } from './analytics/owner.ts';
import { accountingHandlers } from './accounting/handlers.ts';
import { startAccountingWorker } from './accounting/worker.ts';
import { startIngestConsumer } from './analytics/ingest.ts';
import { AnalyticsReader } from './analytics/reader.ts';
import { documentHandlers, sellerOf } from './documents/handlers.ts';
import { invoiceHandlers } from './invoices/index.ts';
import { PdfRenderer } from './pdf/browser.ts';

/** The actor answering svc.invoice.health; also what start-up asks for to find other invoice instances. */
const HEALTH_ACTOR = 'invoice-health';

/** Invoicing: preparation, editing, review, rendering, accounting sync. */
export const invoiceDomain: DomainModule = {
  name: 'invoice',
  async start(domain: DomainContext): Promise<DomainHandle> {
    // chDB lives in one process: a second invoice instance would split or lock the data, so it is refused before opening.
    if (usesEmbeddedAnalytics(domain.config))
      await refuseSecondEmbeddedInstance(domain.nc, HEALTH_ACTOR, 'svc.invoice.health');
    const analytics = await analyticsStore(domain.stores, domain.config);
    // Only this process can open chDB while the system runs, so its DDL is applied here (`npm run migrate` skips it).
    if (analytics.kind === 'chdb') await migrateAnalytics(analytics, domain.log);
    await domain.host.serve('invoice', HEALTH_ACTOR, {
      'svc.invoice.health': async () => {
        try {
          await analytics.ping();
          return { analytics_store: 'ok' };
        } catch (err) {
          return { analytics_store: `unreachable: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300) };
        }
      },
    });
    const orm = await domain.stores.orm();
    const reader = new AnalyticsReader(analytics);
    await domain.host.serve(
      'invoice',
      'invoice-invoices',
      invoiceHandlers({ orm, reader, clock: domain.clock, nc: domain.nc }),
    );
    // One warm browser per process, started by the first finalize, closed when the domain stops.
    const renderer = new PdfRenderer({
      executablePath: domain.config.SVC_CHROMIUM_PATH,
      pages: domain.config.SVC_PDF_PAGES,
      log: domain.log.child({ actor: 'invoice-pdf' }),
    });
    await domain.host.serve(
      'invoice',
      'invoice-documents',
      documentHandlers({
        orm,
        seller: sellerOf(domain.config),
        renderer,
        reader,
        log: domain.log,
        nc: domain.nc,
        clock: domain.clock,
      }),
    );
    // Batches from other systems (and the demo seed) land in the analytics store through this durable consumer.
    const ingest = await startIngestConsumer(domain.nc, analytics, domain.log.child({ actor: 'invoice-ingest' }));
    // Accounting sync: the route queues a durable job; the worker pushes it with retries (actors/invoice/accounting/).
    await domain.host.serve(
      'invoice',
      'invoice-accounting',
      accountingHandlers({ orm, nc: domain.nc, config: domain.config }),
    );
    const accounting = await startAccountingWorker({
      nc: domain.nc,
      orm,
      config: domain.config,
      log: domain.log.child({ actor: 'invoice-accounting-sync' }),
    });
    return {
      stop: async () => {
        await accounting.stop();
        await ingest.stop();
        await renderer.close();
      },
    };
  },
};
