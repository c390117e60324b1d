import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config.ts';
import { pickSlas } from '../../actors/servicedesk/sync/normalize.ts';
import type { SlaDto, TrackerField } from '../../actors/servicedesk/tracker/api.ts';
import { chooseFields, jqlField } from '../../actors/servicedesk/tracker/site.ts';

/** Which of the site's fields the service desk reads: by the SLAs' whole default names and type, or as an operator names them. */
const sla = (id: string, name: string): TrackerField => ({
  id,
  name,
  schema: { custom: 'com.atlassian.servicedesk:sd-sla-field' },
});
const orgs = (id: string): TrackerField => ({
  id,
  name: 'Organizations',
  schema: { custom: 'com.atlassian.servicedesk:sd-customer-organizations' },
});
const CLOUD: TrackerField[] = [
  { id: 'summary', name: 'Summary', schema: { custom: undefined } },
  sla('customfield_10133', 'Time to close after resolution'),
  sla('customfield_10132', 'Time to approve normal change'),
  {
    id: 'customfield_10100',
    name: 'Organization',
    schema: { custom: 'com.atlassian.jira.plugin.system.customfieldtypes:select' },
  },
  // A plain field with an SLA's name is not the SLA.
  {
    id: 'customfield_10140',
    name: 'Time to resolution',
    schema: { custom: 'com.atlassian.jira.plugin.system.customfieldtypes:float' },
  },
  sla('customfield_10134', 'Time to resolution'),
  sla('customfield_10135', 'Time to first response'),
  orgs('customfield_10106'),
];

describe('the fields the service desk reads', () => {
  it('are the SLAs named exactly "Time to resolution" and "Time to first response", whatever the order, and Organizations by its type', () => {
    for (const list of [CLOUD, [...CLOUD].reverse()]) {
      const c = chooseFields(list, {});
      expect(c).toMatchObject({
        resolutionSla: 'customfield_10134',
        firstResponseSla: 'customfield_10135',
        organizations: 'customfield_10106',
        warnings: [],
      });
      expect(c.sources).toEqual({ resolution_sla: 'found', first_response_sla: 'found', organizations: 'found' });
    }
  });

  it('without an Organizations field of its type, the spec’s customfield_10002; without the SLAs, none (each request’s /sla then)', () => {
    const c = chooseFields(
      [sla('customfield_10133', 'Time to close after resolution'), sla('customfield_10150', 'Resolution time (gold)')],
      {},
    );
    expect(c).toMatchObject({
      resolutionSla: undefined,
      firstResponseSla: undefined,
      organizations: 'customfield_10002',
    });
    expect(c.sources.organizations).toBe('default');
    expect(c.warnings).toEqual([expect.stringContaining('SVC_SD_SLA_RESOLUTION_FIELD')]);
  });

  it('an operator’s ids win, and one the site does not list as expected is warned about but used', () => {
    const c = chooseFields(CLOUD, {
      resolutionSla: 'customfield_10133',
      firstResponseSla: 'customfield_10199',
      organizations: 'customfield_10100',
    });
    expect(c).toMatchObject({
      resolutionSla: 'customfield_10133',
      firstResponseSla: 'customfield_10199',
      organizations: 'customfield_10100',
    });
    expect(c.sources).toEqual({ resolution_sla: 'setting', first_response_sla: 'setting', organizations: 'setting' });
    expect(c.warnings).toHaveLength(2);
    expect(c.warnings[0]).toContain('SVC_SD_SLA_FIRST_RESPONSE_FIELD=customfield_10199: the site lists no such field');
    expect(c.warnings[1]).toContain('SVC_SD_ORGANIZATIONS_FIELD=customfield_10100: the site lists "Organization"');
  });

  it('a request’s own SLA list is read by the same whole names', () => {
    const dto = (name: string): SlaDto => ({ name, completedCycles: [] });
    const picked = pickSlas([
      dto('Time to close after resolution'),
      dto('Time to first response (VIP)'),
      dto('Time to resolution'),
      dto('Time to first response'),
    ]);
    expect(picked.resolution?.name).toBe('Time to resolution');
    expect(picked.firstResponse?.name).toBe('Time to first response');
  });

  it('JQL names a custom field by its number', () => {
    expect(jqlField('customfield_10106')).toBe('cf[10106]');
  });

  it('settings name custom fields only (JQL reads them by number); the site is read again after an hour by default', () => {
    const base = { SVC_DB_URL: 'postgresql://localhost/x' };
    const plain = loadConfig(base);
    expect([
      plain.SVC_SD_SITE_CACHE_SECONDS,
      plain.SVC_SD_SLA_RESOLUTION_FIELD,
      plain.SVC_SD_ORGANIZATIONS_FIELD,
    ]).toEqual([3600, undefined, undefined]);
    const set = loadConfig({
      ...base,
      SVC_SD_SLA_RESOLUTION_FIELD: 'customfield_10134',
      SVC_SD_ORGANIZATIONS_FIELD: '',
    });
    expect([set.SVC_SD_SLA_RESOLUTION_FIELD, set.SVC_SD_ORGANIZATIONS_FIELD]).toEqual(['customfield_10134', undefined]);
    for (const bad of ['10134', 'cf[10134]', 'summary', 'customfield_10134 OR 1=1']) {
      expect(() => loadConfig({ ...base, SVC_SD_SLA_FIRST_RESPONSE_FIELD: bad }), bad).toThrow(
        /SVC_SD_SLA_FIRST_RESPONSE_FIELD: must be a custom field id/,
      );
    }
  });
});
