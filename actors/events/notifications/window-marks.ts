import type { EntityManager } from '@mikro-orm/postgresql';
import type { Note, TimelineEvent } from '../../../contracts/domains/events-charts.ts';
import { iso, sql } from '../../../platform/stores/sql.ts';
import { derivedId } from './derived-id.ts';
import { occurrencesBetween, type Occurrence } from './maintenance-windows.ts';
import { WINDOW_COLUMNS, type WindowRow } from './rows.ts';

/**
 * Maintenance windows as the charts and the timeline show them: each occurrence in the range a read-only range note
 * of kind `maintenance` (its id derived from the window and the occurrence), and a timeline row at its start. A
 * place sees the windows over it: a host those of the host, of its environment and of its client; an environment
 * those of the environment, of its hosts and of its client; a client all of its own.
 */

export interface Place {
  kind: 'host' | 'environment' | 'client';
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
}

/** At most this many occurrences per window and range: a chart draws them as bands, a few are enough. */
const PER_WINDOW = 100;

async function windowsOf(em: EntityManager, p: Place): Promise<WindowRow[]> {
  if (p.kind === 'host')
    return sql<WindowRow>(
      em,
      `SELECT ${WINDOW_COLUMNS} FROM maintenance_windows WHERE client_id = ?
         AND (host_id = ? OR (host_id IS NULL AND (environment_id IS NULL OR environment_id = ?)))`,
      [p.client_id, p.host_id, p.environment_id],
    );
  if (p.kind === 'environment')
    return sql<WindowRow>(
      em,
      `SELECT ${WINDOW_COLUMNS} FROM maintenance_windows WHERE client_id = ? AND (environment_id IS NULL OR environment_id = ?)`,
      [p.client_id, p.environment_id],
    );
  return sql<WindowRow>(em, `SELECT ${WINDOW_COLUMNS} FROM maintenance_windows WHERE client_id = ?`, [p.client_id]);
}

/** An occurrence's note id, fixed by the window and the occurrence's start. */
const occurrenceId = (windowId: string, start: Date): string => derivedId(`${windowId}@${start.toISOString()}`);

async function occurrencesOver(
  em: EntityManager,
  p: Place,
  start: Date,
  end: Date,
): Promise<{ w: WindowRow; o: Occurrence }[]> {
  const out: { w: WindowRow; o: Occurrence }[] = [];
  for (const w of await windowsOf(em, p))
    for (const o of occurrencesBetween(w, start, new Date(end.getTime() + 1), PER_WINDOW)) out.push({ w, o });
  return out;
}

/** The range notes of the windows over a chart, oldest first. */
export async function windowNotes(em: EntityManager, p: Place, start: Date, end: Date): Promise<Note[]> {
  const found = await occurrencesOver(em, p, start, end);
  return found
    .map(({ w, o }): Note => ({
      id: occurrenceId(w.id, o.start),
      scope: w.host_id ? 'host' : w.environment_id ? 'environment' : 'client',
      kind: 'maintenance',
      client_id: w.client_id,
      environment_id: w.environment_id,
      host_id: w.host_id,
      timestamp: o.start.toISOString(),
      ends_at: o.end.toISOString(),
      text: `Maintenance window: ${w.name}`,
      created_by: w.created_by ?? w.id,
      created_by_name: 'maintenance window',
      created_at: iso(w.created_at),
      updated_at: iso(w.updated_at),
    }))
    .sort((a, b) => a.timestamp.localeCompare(b.timestamp));
}

/** The timeline rows of the windows over a place: one at each occurrence's start within the range. */
export async function windowTimeline(em: EntityManager, p: Place, start: Date, end: Date): Promise<TimelineEvent[]> {
  const found = await occurrencesOver(em, p, start, end);
  return found
    .filter(({ o }) => o.start >= start && o.start <= end)
    .map(({ w, o }): TimelineEvent => ({
      timestamp: o.start.toISOString(),
      event_type: 'notification',
      title: `Maintenance window: ${w.name}`,
      description: `Notifications held back until ${o.end.toISOString()}.`,
      host_id: w.host_id,
      environment_id: w.environment_id,
    }));
}
