import type { z } from 'zod';
import { RequestTypeFields } from '../../../contracts/domains/servicedesk-proxy.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { mappingsFor } from '../scope.ts';
import { READ } from './target.ts';

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

/** The fields a request type asks for on a service desk of the caller's mappings, cached in the KV store. */
export function requestTypeFieldHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.request_types.fields': async ({ service_desk_id, request_type_id }, { ctx, deadline, signal }) => {
      const mappings = await mappingsFor(deps.orm.em.fork(), ctx, READ, {});
      if (!mappings.some((m) => m.service_desk_ids.includes(service_desk_id)))
        throw new DomainError('not_found', `service desk ${service_desk_id} is not in your organization mappings`);
      const key = `sd:fields:${service_desk_id}:${request_type_id}`;
      // A cache that cannot be reached is a miss, never a failure.
      const cached = await deps.kv.get(key).catch(() => null);
      if (cached) {
        // An entry that does not parse (truncated, an older shape) is a miss too.
        const parsed = RequestTypeFields.safeParse(parseJson(cached));
        if (parsed.success) return parsed.data;
      }
      const dto = await trackerOf(deps).requestTypeFields(service_desk_id, request_type_id, { deadline, signal });
      const out: z.output<typeof RequestTypeFields> = {
        fields: dto.requestTypeFields.map((f) => ({
          field_id: f.fieldId,
          name: f.name,
          description: f.description,
          required: f.required,
          visible: f.visible,
          default_values: f.defaultValues,
          valid_values: f.validValues,
          schema: f.jiraSchema
            ? {
                type: f.jiraSchema.type ?? null,
                system: f.jiraSchema.system ?? null,
                custom: f.jiraSchema.custom ?? null,
              }
            : null,
        })),
        can_raise_on_behalf_of: dto.canRaiseOnBehalfOf,
        can_add_request_participants: dto.canAddRequestParticipants,
      };
      await deps.kv
        .set(key, JSON.stringify(out), { ttlMs: deps.config.SVC_SD_FIELD_CACHE_TTL * 1000 })
        .catch(() => undefined);
      return out;
    },
  };
}
