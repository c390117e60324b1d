import { requirePermission } from '../../contracts/access.ts';
import type { DomainContext, DomainHandle, DomainModule } from '../../platform/domain.ts';
import { AuditRecorder } from '../../platform/audit.ts';
import { UploadStore } from './uploads/store.ts';
import { missingSettings, notConfigured, whenConfigured, type SdDeps, type SdHandlers } from './deps.ts';
import { mappingHandlers } from './mappings.ts';
import { attachmentHandlers } from './proxy/attachments.ts';
import { proxyHandlers } from './proxy/handlers.ts';
import { ReadMemo } from './reads/memo.ts';
import { metricsHandlers } from './reads/metrics.ts';
import { ticketHandlers } from './reads/tickets.ts';
import { SyncEngine } from './sync/engine.ts';
import { TrackerApi } from './tracker/api.ts';
import { TokenBucket } from './tracker/bucket.ts';
import { TrackerClient } from './tracker/client.ts';
import { SiteCatalog } from './tracker/site.ts';

/**
 * Service desk over the external issue tracker: organization mappings, a read store kept in sync with the tracker
 * (lists, board, metrics, export read only from it), and a proxy for comments, transitions, approvals, attachments
 * and request creation behind ownership checks. Imports no other domain.
 */
export const servicedeskDomain: DomainModule = {
  name: 'servicedesk',
  async start(domain: DomainContext): Promise<DomainHandle> {
    const log = domain.log;
    const [orm, kv] = await Promise.all([domain.stores.orm(), domain.stores.kv()]);
    const { SVC_SD_BASE_URL: baseUrl, SVC_SD_EMAIL: email, SVC_SD_API_TOKEN: apiToken } = domain.config;
    const bucket = new TokenBucket(kv, log);
    const tracker =
      baseUrl && email && apiToken
        ? new TrackerApi(
            new TrackerClient({ baseUrl, email, apiToken, timeoutMs: domain.config.SVC_SD_TIMEOUT_MS }, bucket, log),
          )
        : undefined;
    if (!tracker)
      log.warn(
        { missing: missingSettings(domain.config) },
        `${notConfigured(domain.config).message}; every service-desk route answers 503 until then`,
      );
    const memo = new ReadMemo(kv);
    const overrides = {
      resolutionSla: domain.config.SVC_SD_SLA_RESOLUTION_FIELD,
      firstResponseSla: domain.config.SVC_SD_SLA_FIRST_RESPONSE_FIELD,
      organizations: domain.config.SVC_SD_ORGANIZATIONS_FIELD,
    };
    const site = tracker
      ? new SiteCatalog(tracker, overrides, domain.config.SVC_SD_SITE_CACHE_SECONDS * 1000, log)
      : undefined;
    const sync = tracker
      ? new SyncEngine(orm, tracker, domain.nc, log.child({ worker: 'servicedesk-sync' }), {
          intervalSeconds: domain.config.SVC_SD_SYNC_INTERVAL_SECONDS,
          overlapSeconds: domain.config.SVC_SD_SYNC_OVERLAP_SECONDS,
          changed: () => memo.bump(),
          ...(site ? { site } : {}),
        })
      : undefined;
    const deps: SdDeps = {
      orm,
      kv,
      audit: new AuditRecorder(domain.nc, domain.clock),
      config: domain.config,
      clock: domain.clock,
      log,
      tracker,
      sync,
      site,
      uploads: new UploadStore(() => domain.nc),
      memo,
    };
    const syncHandlers: SdHandlers = {
      'svc.servicedesk.sync.run': async (_input, { ctx }) => {
        requirePermission(ctx, 'servicedeskconfig:write');
        if (!deps.sync) throw notConfigured(domain.config);
        return deps.sync.run();
      },
    };
    await domain.host.serve(
      'servicedesk',
      'servicedesk-config',
      whenConfigured(deps, { ...mappingHandlers(deps), ...syncHandlers }),
    );
    await domain.host.serve(
      'servicedesk',
      'servicedesk-reads',
      whenConfigured(deps, { ...ticketHandlers(deps), ...metricsHandlers(deps) }),
    );
    await domain.host.serve(
      'servicedesk',
      'servicedesk-proxy',
      whenConfigured(deps, { ...proxyHandlers(deps), ...attachmentHandlers(deps) }),
    );
    sync?.start();
    return {
      stop: async () => {
        await sync?.stop();
        await bucket.close();
      },
    };
  },
};
