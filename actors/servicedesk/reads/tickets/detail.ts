import type { z } from 'zod';
import type { SlaCycle, TicketDetail } from '../../../../contracts/domains/servicedesk.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { iso, sql } from '../../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../../deps.ts';
import { locateForRead } from '../locate.ts';
import { PENDING_CREATES, ticketColumns, ticketOut, WITH_TRANSITIONS, type TicketRow } from '../query.ts';

const round2 = (n: number): number => Math.round(n * 100) / 100;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** The end of a due date (the day is the tracker's date, read as UTC). */
export const dueEnd = (due: string): number => Date.parse(`${due}T00:00:00.000Z`) + DAY;

interface DerivedRow {
  created_at: string;
  started_at: string | null;
  resolved_at: string | null;
  due_date: string | null;
  first_response_ms: string | number | null;
  first_response_breached: boolean | null;
  resolution_breached: boolean | null;
  resolution_sla_status: string;
  sla: SlaCycle[];
}

/** SLA and delivery figures of one request (contracts: TicketDetail). */
export function slaAndDelivery(d: DerivedRow, now: number): Pick<z.output<typeof TicketDetail>, 'sla' | 'delivery'> {
  const created = Date.parse(iso(d.created_at));
  const started = d.started_at ? Date.parse(iso(d.started_at)) : created;
  const resolved = d.resolved_at ? Date.parse(iso(d.resolved_at)) : null;
  const ended = resolved ?? now;
  const frMs = d.first_response_ms === null ? null : Number(d.first_response_ms);
  const onTime = d.due_date ? ended <= dueEnd(d.due_date) : d.resolution_breached !== true;
  return {
    sla: {
      first_response_sla_met: frMs !== null && d.first_response_breached === false ? 1 : 0,
      first_response_hours: frMs === null ? null : round2(frMs / HOUR),
      resolution_sla_status: d.resolution_sla_status,
      resolution_hours: resolved === null ? null : round2((resolved - created) / HOUR),
      cycles: d.sla,
    },
    delivery: {
      started_at: new Date(started).toISOString(),
      resolved_at: resolved === null ? null : new Date(resolved).toISOString(),
      due_date: d.due_date,
      cycle_time_days: round2(Math.max(0, ended - started) / DAY),
      is_on_time: onTime ? 1 : 0,
    },
  };
}

/** One request: the ticket, its status history, its SLA and delivery figures (a pending create has neither yet). */
export function ticketDetailHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.tickets.get': async ({ issue_key, organization_id }, { ctx }) => {
      const found = await locateForRead(deps.orm.em.fork(), ctx, issue_key, organization_id);
      const key = found.issue_key;
      const now = deps.clock.now();
      if (!found.stored) {
        const [row] = await sql<TicketRow>(
          deps.orm.em.fork(),
          `SELECT ${ticketColumns('v.pending')} FROM (${PENDING_CREATES} AND p.issue_key = ?) v`,
          [key],
        );
        if (!row) throw new DomainError('not_found', `request ${key} not found`);
        const derived: DerivedRow = {
          created_at: row.created_at,
          started_at: null,
          resolved_at: null,
          due_date: null,
          first_response_ms: null,
          first_response_breached: null,
          resolution_breached: null,
          resolution_sla_status: 'none',
          sla: [],
        };
        return { ticket: ticketOut(row), status_history: [], ...slaAndDelivery(derived, now) };
      }
      // The three parts are independent reads: loaded in parallel.
      const [ticketRows, history, derivedRows] = await Promise.all([
        sql<TicketRow>(
          deps.orm.em.fork(),
          `SELECT ${ticketColumns('v.pending')} FROM (${WITH_TRANSITIONS} WHERE r.issue_key = ?) v`,
          [key],
        ),
        sql<{ from_status: string | null; to_status: string; changed_at: string }>(
          deps.orm.em.fork(),
          `SELECT from_status, to_status, changed_at FROM sd_status_history WHERE issue_key = ? ORDER BY seq`,
          [key],
        ),
        sql<DerivedRow>(
          deps.orm.em.fork(),
          `SELECT created_at, started_at, resolved_at, due_date::text AS due_date, first_response_ms, first_response_breached, resolution_breached, resolution_sla_status, sla
           FROM sd_requests WHERE issue_key = ?`,
          [key],
        ),
      ]);
      const [row] = ticketRows;
      const [derived] = derivedRows;
      if (!row || !derived) throw new DomainError('not_found', `request ${key} not found`);
      return {
        ticket: ticketOut(row),
        status_history: history.map((h) => ({
          from_status: h.from_status,
          to_status: h.to_status,
          changed_at: iso(h.changed_at),
        })),
        ...slaAndDelivery(derived, now),
      };
    },
  };
}
