import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../contracts/access.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { siteOf, trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { mappingsFor } from '../scope.ts';
import { dtoDate } from '../tracker/api.ts';
import { logAction, READ, WRITE } from './target.ts';

/**
 * A new request raised in the tracker on a service desk of one of the caller's writable mappings, with the mapping's
 * organization (and labels) set by the service; shown (as pending) until the sync stores it.
 */
export function requestCreateHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.requests.create': async (body, { ctx, deadline, signal }) => {
      requirePermission(ctx, WRITE);
      const em = deps.orm.em.fork();
      const writable = (await mappingsFor(em, ctx, WRITE, { organization_id: body.organization_id })).filter((m) =>
        m.service_desk_ids.includes(body.service_desk_id),
      );
      if (writable.length === 0) {
        const readable = (
          await mappingsFor(em, ctx, READ, { organization_id: body.organization_id }).catch(() => [])
        ).filter((m) => m.service_desk_ids.includes(body.service_desk_id));
        if (readable.length > 0)
          throw new DomainError(
            'forbidden',
            `missing permission ${WRITE} on the client of service desk ${body.service_desk_id}`,
          );
        throw new DomainError(
          'bad_request',
          `service_desk_id ${body.service_desk_id} does not belong to any of your organization mappings`,
        );
      }
      const orgs = [...new Set(writable.map((m) => m.organization_id))];
      if (orgs.length > 1)
        throw new DomainError(
          'bad_request',
          `service desk ${body.service_desk_id} is mapped for several organizations (${orgs.join(', ')}): add organization_id`,
        );
      const mapping = writable[0]!;
      const labels = [...new Set(writable.flatMap((m) => m.labels))];
      const { organizations } = await siteOf(deps).get({ deadline, signal });
      // The contract refuses customfield_10002; a site keeping the Organizations field elsewhere is refused the same way.
      if (organizations in body.request_field_values)
        throw new DomainError(
          'bad_request',
          `request_field_values.${organizations} is the Organizations field: the service sets it`,
        );
      const created = await trackerOf(deps).createRequest(
        {
          serviceDeskId: body.service_desk_id,
          requestTypeId: body.request_type_id,
          // The organization is ours to set (the site's Organizations field), and a label-scoped mapping's labels.
          requestFieldValues: {
            ...body.request_field_values,
            [organizations]: [Number(mapping.organization_id)],
            ...(labels.length > 0 ? { labels } : {}),
          },
          ...(body.raiseOnBehalfOf ? { raiseOnBehalfOf: body.raiseOnBehalfOf } : {}),
        },
        { deadline, signal },
      );
      const createdAt = dtoDate(created.createdDate) ?? new Date();
      const callerEmail = ctx.principal.kind === 'user' ? ctx.principal.email : null;
      const projectKey = created.issueKey.split('-')[0] ?? '';
      await sql(
        em,
        `INSERT INTO sd_pending (id, issue_key, kind, organization_id, status, status_category, effective_at, fields) VALUES (?, ?, 'create', ?, 'PENDING', 'new', ?, ?::jsonb)`,
        [
          randomUUID(),
          created.issueKey,
          mapping.organization_id,
          createdAt.toISOString(),
          pgJson({
            issue_id: created.issueId,
            project_key: projectKey,
            issue_number: Number(created.issueKey.split('-')[1] ?? 0),
            service_desk_id: body.service_desk_id,
            request_type_id: body.request_type_id,
            summary: body.request_field_values.summary,
            reporter_name: created.reporter?.displayName ?? null,
            reporter_email: (created.reporter?.emailAddress ?? callerEmail)?.toLowerCase() ?? null,
            labels,
          }),
        ],
      );
      await deps.memo.bump();
      await logAction(deps, ctx, created.issueKey, mapping, 'create', {
        service_desk_id: body.service_desk_id,
        request_type_id: body.request_type_id,
        organization_id: mapping.organization_id,
        summary: body.request_field_values.summary,
        ...(body.raiseOnBehalfOf ? { raise_on_behalf_of: body.raiseOnBehalfOf } : {}),
      });
      return {
        issue_key: created.issueKey,
        issue_id: created.issueId,
        service_desk_id: body.service_desk_id,
        request_type_id: body.request_type_id,
        organization_id: mapping.organization_id,
        status: 'PENDING',
        created: createdAt.toISOString(),
      };
    },
  };
}
