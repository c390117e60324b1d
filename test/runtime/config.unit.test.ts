import { describe, expect, it } from 'vitest';
import { selectDomains } from '../../actors/index.ts';
import { ConfigError, loadConfig, requireSecrets, unknownVariables } from '../../platform/config.ts';

describe('configuration', () => {
  it('requires SVC_DB_URL and names it', () => {
    expect(() => loadConfig({})).toThrow(ConfigError);
    expect(() => loadConfig({})).toThrow(/SVC_DB_URL: is required/);
  });

  it('names each malformed variable', () => {
    const run = () =>
      loadConfig({
        SVC_DB_URL: 'mysql://x',
        SVC_SERVER_PORT: 'eighty',
        SVC_MFA_ENCRYPTION_KEY: 'abc',
        SVC_ENABLE_DEBUG_ENDPOINTS: 'maybe',
      });
    expect(run).toThrow(/SVC_DB_URL: must be a postgresql:\/\/ URL/);
    expect(run).toThrow(/SVC_SERVER_PORT/);
    expect(run).toThrow(/SVC_MFA_ENCRYPTION_KEY: must be 64 hex characters/);
    expect(run).toThrow(/SVC_ENABLE_DEBUG_ENDPOINTS/);
  });

  it('applies the documented defaults', () => {
    const c = loadConfig({ SVC_DB_URL: 'postgresql://localhost/x' });
    expect(c).toMatchObject({
      SVC_SERVER_BIND: '127.0.0.1',
      SVC_SERVER_PORT: 8080,
      SVC_INVOICING_PORT: 8081,
      SVC_JWT_ACCESS_TTL: 900,
      SVC_JWT_REFRESH_TTL: 604800,
      SVC_API_RATE_LIMIT: 1000,
      SVC_AUTH_RATE_LIMIT: 5,
      SVC_ENABLE_DEBUG_ENDPOINTS: false,
      SVC_AGENT_STALE_TIMEOUT_SECONDS: 300,
      SVC_SD_FIELD_CACHE_TTL: 86400,
      SVC_SSO_CLIENT_ID: '',
      SVC_ACTORS: ['all'],
    });
    expect(c.SVC_VALKEY_URL).toBeUndefined();
    expect(
      loadConfig({ SVC_DB_URL: 'postgresql://localhost/x', SVC_CORS_ORIGINS: 'https://a.example, https://b.example' })
        .SVC_CORS_ORIGINS,
    ).toEqual(['https://a.example', 'https://b.example']);
  });

  it('names SVC_* variables nothing reads (typos), but not the set-up script knobs', () => {
    expect(
      unknownVariables({ SVC_DB_URL: 'x', SVC_ENABLE_DEBUG_ENDPOINT: 'true', SVC_SETUP_QUIET: '1', PATH: '/bin' }),
    ).toEqual(['SVC_ENABLE_DEBUG_ENDPOINT']);
  });

  it('refuses to run identity without its secrets, naming them', () => {
    const c = loadConfig({ SVC_DB_URL: 'postgresql://localhost/x' });
    expect(() => requireSecrets(c, ['SVC_JWT_SECRET', 'SVC_MFA_ENCRYPTION_KEY'])).toThrow(
      /SVC_JWT_SECRET: is required[\s\S]*SVC_MFA_ENCRYPTION_KEY: is required/,
    );
  });

  it('selects the domains a process runs', () => {
    expect(selectDomains(['all']).map((d) => d.name)).toEqual([
      'identity',
      'fleet',
      'invoice',
      'servicedesk',
      'events',
    ]);
    expect(selectDomains(['invoice']).map((d) => d.name)).toEqual(['invoice']);
    expect(selectDomains(['none'])).toEqual([]);
    expect(() => selectDomains(['billing'])).toThrow(/unknown domain\(s\) billing/);
  });
});

describe('SVC_FRONTEND_URL', () => {
  const base = { SVC_DB_URL: 'postgresql://postgres@127.0.0.1:5432/test' };
  it("defaults to the console gateway's own address, which serves the web console", () => {
    expect(loadConfig(base).SVC_FRONTEND_URL).toBe('http://localhost:8080');
    expect(loadConfig({ ...base, SVC_BACKEND_URL: 'https://console.example.net' }).SVC_FRONTEND_URL).toBe(
      'https://console.example.net',
    );
  });
  it('keeps one that is set, and refuses one that is no URL', () => {
    expect(loadConfig({ ...base, SVC_FRONTEND_URL: 'http://localhost:5173' }).SVC_FRONTEND_URL).toBe(
      'http://localhost:5173',
    );
    expect(() => loadConfig({ ...base, SVC_FRONTEND_URL: 'not a url' })).toThrow(/SVC_FRONTEND_URL/);
  });
});
