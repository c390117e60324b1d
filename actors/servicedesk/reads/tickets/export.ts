import { stringify } from 'csv-stringify/sync';
import { iso, isoOrNull, sql } from '../../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../../deps.ts';
import type { TicketRow } from '../query.ts';
import { prepare } from './prepare.ts';

export const EXPORT_LIMIT = 10_000;

/** Cells a spreadsheet would run as a formula get a leading apostrophe (CSV injection). */
export function neutralize(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
}

const CSV_HEADER = [
  'issue_key',
  'summary',
  'status',
  'status_category',
  'priority',
  'issue_type',
  'assignee',
  'reporter_email',
  'organization_ids',
  'labels',
  'linked_issue_key',
  'created',
  'updated',
  'resolved',
  'due_date',
];

/** The tickets under the filters as a CSV file (at most EXPORT_LIMIT rows). */
export function exportHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.export': async (f, { ctx }) => {
      const em = deps.orm.em.fork();
      const p = await prepare(em, f, ctx);
      const rows = p
        ? await sql<TicketRow>(
            em,
            `SELECT ${p.columns} FROM ${p.from} ORDER BY ${p.order} LIMIT ${EXPORT_LIMIT}`,
            p.params,
          )
        : [];
      const records = rows.map((r) =>
        [
          r.issue_key,
          r.summary,
          r.status,
          r.status_category,
          r.priority ?? '',
          r.issue_type ?? '',
          r.assignee ?? '',
          r.reporter_email ?? '',
          r.organization_ids.join(' '),
          r.labels.join(' '),
          r.linked_issue_key ?? '',
          iso(r.created_at),
          iso(r.updated_at),
          isoOrNull(r.resolved_at) ?? '',
          r.due_date ?? '',
        ].map(neutralize),
      );
      const csv = stringify([CSV_HEADER, ...records], { quoted_match: /[",\r\n]/ });
      const day = new Date(deps.clock.now()).toISOString().slice(0, 10).replaceAll('-', '');
      return { filename: `service-desk-export-${day}.csv`, rows: records.length, csv };
    },
  };
}
