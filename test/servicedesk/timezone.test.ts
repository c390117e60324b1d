import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { throughputSince } from '../../actors/servicedesk/reads/metrics.ts';
import { expectStatus } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import { DAY, get, HOUR, SD, startSdSystem, stopSdSystem, type SdSystem } from './support.ts';

/**
 * The read routes must not depend on the database session's TimeZone. Every connection this file's system opens
 * (node-postgres reads PGOPTIONS) runs in Pacific/Auckland, 12 or 13 hours off UTC; a time compared without its zone
 * would be read there.
 */
const ZONE = 'Pacific/Auckland';
const previous = process.env.PGOPTIONS;
let s: SdSystem;

beforeAll(async () => {
  process.env.PGOPTIONS = `-c TimeZone=${ZONE}`;
  s = await startSdSystem();
});
afterAll(async () => {
  await stopSdSystem(s);
  if (previous === undefined) delete process.env.PGOPTIONS;
  else process.env.PGOPTIONS = previous;
});

describe('metrics in a session whose TimeZone is not UTC', () => {
  it('the session really is in another zone', async () => {
    expect(await s.sys.sql<{ TimeZone: string }>('SHOW TimeZone')).toEqual([{ TimeZone: ZONE }]);
  });

  it('the 30-day window starts at a full instant with its zone', () => {
    const now = Date.parse('2026-11-22T20:40:31.250Z');
    expect(throughputSince(now)).toBe('2026-10-23T20:40:00.000Z');
  });

  it('summary: throughput_30d counts exactly the requests resolved in the last 30 days', async () => {
    // An organization of this test's own; one request resolved 6 hours inside the window, one 6 hours before it (a
    // window start read in Auckland time would begin 13 hours early and count both).
    const org = String(700_000_000 + Math.floor(Math.random() * 90_000_000));
    const project = `ZZ${Date.now().toString(36).toUpperCase()}`;
    const client = await createClient(s.sys);
    const mappingId = randomUUID();
    await s.sys.sql(
      `INSERT INTO sd_mappings (id, client_id, organization_id, organization_name, service_desk_ids, project_keys) VALUES (?, ?, ?, 'Zone Ltd', '{1}', ?::text[])`,
      [mappingId, client.id, org, `{${project}}`],
    );
    try {
      const now = Date.now();
      const resolved = [now - 30 * DAY + 6 * HOUR, now - 30 * DAY - 6 * HOUR];
      for (const [i, at] of resolved.entries()) {
        await s.sys.sql(
          `INSERT INTO sd_requests (issue_key, issue_id, project_key, issue_number, summary, status, status_category, organization_ids, created_at, updated_at, resolved_at)
           VALUES (?, ?, ?, ?, 'Zone', 'Done', 'done', ?::text[], ?::timestamptz - interval '1 day', ?::timestamptz, ?::timestamptz)`,
          [
            `${project}-${i + 1}`,
            String(6_000_000 + i),
            project,
            i + 1,
            `{${org}}`,
            new Date(at).toISOString(),
            new Date(at).toISOString(),
            new Date(at).toISOString(),
          ],
        );
      }
      const res = await get(s, s.root, `${SD}/metrics/summary?organization_id=${org}`);
      expectStatus(res, 200);
      expect(res.json().data).toMatchObject({ resolved_count: 2, throughput_30d: 1 });
    } finally {
      await s.sys.sql(`DELETE FROM sd_requests WHERE project_key = ?`, [project]);
      await s.sys.sql(`DELETE FROM sd_mappings WHERE id = ?`, [mappingId]);
    }
  });
});
