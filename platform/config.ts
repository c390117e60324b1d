import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().int().positive();
const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const url = z.url();
const optionalUrl = z.preprocess((v) => (v === '' ? undefined : v), url.optional());
/** A tracker custom field's id; JQL names it by its number (`cf[10031]`), so nothing else is accepted. */
const trackerFieldId = z.preprocess(
  (v) => (v === '' ? undefined : v),
  z
    .string()
    .regex(/^customfield_\d{1,12}$/, 'must be a custom field id such as customfield_10031')
    .optional(),
);

/** Every SVC_* variable the system reads; names and defaults are the specs' where they give them. docs/operations.md lists them all. */
export const ConfigSchema = z.object({
  SVC_DB_URL: z
    .string({ error: 'is required (a PostgreSQL URL such as postgresql://postgres@127.0.0.1:5432/test)' })
    .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL'),
  SVC_NATS_URL: z.string().default('nats://127.0.0.1:4223'),
  // broker security (docs/operations.md → Security model): this process's NATS user, the keys that issue and revoke
  // users, and the key that signs caller contexts between services
  SVC_NATS_CREDS: z.string().optional(),
  SVC_NATS_ISSUER_KEY: z.string().optional(),
  SVC_NATS_OPERATOR_KEY: z.string().optional(),
  SVC_NATS_SYSTEM_CREDS: z.string().optional(),
  // TLS (docs/operations.md → Security model): the CA every client verifies the broker against (also handed to
  // enrolling agents, who pin it), and the broker's own certificate and key when an operator brings them
  // (scripts/local-nats.ts; otherwise it makes a CA and certificate under data/nats)
  SVC_NATS_CA: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  SVC_NATS_TLS_CERT: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  SVC_NATS_TLS_KEY: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  // copies of every stream, KV bucket and durable consumer the system creates (3 in a three-node cluster)
  SVC_NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  SVC_CONTEXT_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  SVC_CONTEXT_KEY_PREVIOUS: list.default([]),
  SVC_CONTEXT_MAX_AGE_SECONDS: z.coerce.number().int().min(1).max(600).default(30),
  SVC_NAMESPACE: z
    .string()
    .regex(/^([a-z0-9_-]{1,32})?$/i, 'must be 1-32 letters, digits, _ or -')
    .default(''),
  SVC_VALKEY_URL: optionalUrl,
  SVC_CLICKHOUSE_URL: optionalUrl,
  SVC_ANALYTICS_PATH: z.string().default('./data/analytics'),
  SVC_TSDB_URL: url.default('http://127.0.0.1:8428'),
  // A VictoriaMetrics cluster: writes to vminsert, reads to vmselect (each unset = SVC_TSDB_URL; see tsdbBases)
  SVC_TSDB_WRITE_URL: optionalUrl,
  SVC_TSDB_READ_URL: optionalUrl,
  // POST /metrics/query: VictoriaMetrics' own timeout for a caller's PromQL (also capped by the request's deadline)
  SVC_METRICS_QUERY_TIMEOUT_MS: z.coerce.number().int().min(1).max(300_000).default(10_000),
  SVC_SERVER_BIND: z.string().default('127.0.0.1'),
  SVC_SERVER_PORT: port.default(8080),
  SVC_INVOICING_PORT: port.default(8081),
  SVC_CORS_ORIGINS: list.default([]),
  SVC_ENABLE_DEBUG_ENDPOINTS: bool.default(false),
  SVC_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  // actors check every reply against its subject's schema (and that the check changed nothing on the wire) before
  // sending it: on in tests and development, off by default in production, where it is a few percent of each request
  SVC_VALIDATE_REPLIES: bool.default(false),
  SVC_ACTORS: list.default(['all']),
  SVC_GATEWAYS: list.default(['console', 'invoicing']),
  SVC_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SVC_CHROMIUM_PATH: z.string().default('/usr/bin/chromium'),
  // the seller block of every rendered invoice (address lines separated by `|` or new lines)
  SVC_INVOICE_SELLER_NAME: z.string().max(200).default('Example Services Ltd'),
  SVC_INVOICE_SELLER_ADDRESS: z.string().max(1000).default('1 Example Street | 10115 Berlin | Germany'),
  SVC_INVOICE_SELLER_EMAIL: z.string().max(200).default('billing@example.com'),
  SVC_INVOICE_SELLER_VAT_ID: z.string().max(100).default(''),
  SVC_PDF_PAGES: z.coerce.number().int().min(1).max(16).default(2),
  // accounting sync: both set = the integration is configured; sync-accounting answers 400 otherwise
  SVC_ACCOUNTING_URL: optionalUrl,
  SVC_ACCOUNTING_TOKEN: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  // its retry policy: attempts (deliveries) before the dead letter, the backoff schedule (ms, jittered, the last entry
  // repeats) and the longest Retry-After honoured (a longer one is capped to it)
  SVC_ACCOUNTING_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
  SVC_ACCOUNTING_BACKOFF_MS: list
    .pipe(
      z
        .array(
          z
            .string()
            .regex(/^\d{1,7}$/, 'must be milliseconds (a whole number up to 7 digits)')
            .transform(Number),
        )
        .min(1, 'give at least one delay'),
    )
    .default([2_000, 10_000, 30_000, 60_000, 120_000, 300_000]),
  SVC_ACCOUNTING_RETRY_AFTER_MAX_SECONDS: z.coerce.number().int().min(0).max(3600).default(300),
  // identity (docs/api/identity.md)
  SVC_JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  SVC_JWT_ACCESS_TTL: seconds.default(900),
  SVC_JWT_REFRESH_TTL: seconds.default(604800),
  SVC_MFA_ENCRYPTION_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes)')
    .optional(),
  SVC_API_RATE_LIMIT: z.coerce.number().int().positive().default(1000),
  SVC_AUTH_RATE_LIMIT: z.coerce.number().int().positive().default(5),
  SVC_SSO_CLIENT_ID: z.string().default(''),
  SVC_SSO_CLIENT_SECRET: z.string().optional(),
  SVC_SSO_ISSUER_URL: z.string().default('https://accounts.google.com'),
  SVC_SSO_ALLOWED_DOMAIN: z.string().default('example.com'),
  // token endpoint client authentication; empty: client_secret_basic, or what discovery offers when it lacks basic
  SVC_SSO_TOKEN_AUTH_METHOD: z.enum(['', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt']).default(''),
  SVC_BACKEND_URL: url.default('http://localhost:8080'),
  // where people open the web console (links in e-mails, the SSO redirect); unset: the console gateway itself serves it
  SVC_FRONTEND_URL: url.optional(),
  // where clients reach the invoicing gateway (its OpenAPI document's `servers`; https = served over HTTPS)
  SVC_INVOICING_PUBLIC_URL: url.default('http://localhost:8081'),
  SVC_EMAIL_PROVIDER: z.enum(['smtp', 'resend']).default('smtp'),
  SVC_EMAIL_FROM: z.string().default('noreply@example.com'),
  SVC_EMAIL_FROM_NAME: z.string().default('Infrastructure Console'),
  SVC_SMTP_HOST: z.string().optional(),
  SVC_SMTP_PORT: port.default(587),
  SVC_SMTP_USERNAME: z.string().optional(),
  SVC_SMTP_PASSWORD: z.string().optional(),
  // EHLO name; empty: the host of SVC_FRONTEND_URL when it is a domain name, else the domain of SVC_EMAIL_FROM
  SVC_SMTP_EHLO_NAME: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/, 'must be a host name')
      .optional(),
  ),
  SVC_RESEND_API_KEY: z.string().optional(),
  SVC_RESEND_URL: url.default('https://api.resend.com'),
  SVC_ADMIN_EMAIL: z.string().optional(),
  SVC_ADMIN_PASSWORD: z.string().optional(),
  // operations: fleet and agents (docs/api/fleet.md)
  SVC_AGENT_STALE_TIMEOUT_SECONDS: seconds.default(300),
  // Broker URLs handed to enrolling agents (comma-separated; default: SVC_NATS_URL) and their credentials' lifetime.
  SVC_AGENT_NATS_SERVERS: z.string().default(''),
  SVC_AGENT_CREDENTIALS_TTL_SECONDS: seconds.default(30 * 86_400),
  SVC_SD_FIELD_CACHE_TTL: seconds.default(86400),
  // Host search: longest a PQL search statement may run before PostgreSQL stops it (also bounded by the request deadline).
  SVC_SEARCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(5000),
  // service desk: the issue tracker's site and the account the service acts as (e-mail + API token, HTTP
  // basic authentication); all three set = configured, otherwise every service-desk route answers 503 naming them
  SVC_SD_BASE_URL: optionalUrl,
  SVC_SD_EMAIL: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  SVC_SD_API_TOKEN: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  // read-store sync: how often (0 = only when asked through the admin route) and how far back each incremental run
  // reaches before the last `updated` it stored (the tracker's JQL dates have minute precision)
  SVC_SD_SYNC_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  SVC_SD_SYNC_OVERLAP_SECONDS: z.coerce.number().int().min(60).max(86_400).default(120),
  // one attempt of a call to the tracker gives up after this long (reads are retried, within the request's deadline)
  SVC_SD_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  // the site's fields, named outright (ids such as customfield_10031); unset: found in /rest/api/3/field by their
  // default names and SLA type (the SLAs) or by type (Organizations, else customfield_10002)
  SVC_SD_SLA_RESOLUTION_FIELD: trackerFieldId,
  SVC_SD_SLA_FIRST_RESPONSE_FIELD: trackerFieldId,
  SVC_SD_ORGANIZATIONS_FIELD: trackerFieldId,
  // how long the site's fields, statuses and the account's time zone are kept before the sync reads them again
  SVC_SD_SITE_CACHE_SECONDS: seconds.default(3600),
  // events: the key sealing webhook shared secrets at rest (64 hex characters; unset = derived from
  // SVC_MFA_ENCRYPTION_KEY), and the voice provider that pages on-call numbers (all three of SID, token and caller
  // number set = configured; the API URL points tests at a local peer)
  SVC_EVENTS_ENCRYPTION_KEY: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes)')
      .optional(),
  ),
  SVC_TWILIO_ACCOUNT_SID: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^AC[0-9a-zA-Z]{32}$/, 'must be an account SID (AC and 32 characters)')
      .optional(),
  ),
  SVC_TWILIO_AUTH_TOKEN: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.string().min(16, 'must be at least 16 characters').optional(),
  ),
  SVC_TWILIO_FROM: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number such as +15005550006')
      .optional(),
  ),
  SVC_TWILIO_API_URL: url.default('https://api.twilio.com'),
  // an unanswered page is called again this many times in all, this long apart
  SVC_TWILIO_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  SVC_TWILIO_RETRY_DELAY_SECONDS: z.coerce.number().int().min(0).max(3600).default(120),
  // notifications (docs/api/notifications.md → Delivery): webhook and chat targets must be https and public unless
  // these allow plain http or loopback and private addresses (tests, an internal receiver)
  SVC_NOTIFY_ALLOW_HTTP: bool.default(false),
  SVC_NOTIFY_ALLOW_PRIVATE: bool.default(false),
  SVC_NOTIFY_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  // attempts of one delivery, and the backoff between them (doubling from the base, capped)
  SVC_NOTIFY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(8),
  SVC_NOTIFY_RETRY_BASE_MS: z.coerce.number().int().min(10).max(600_000).default(2_000),
  SVC_NOTIFY_RETRY_CAP_MS: z.coerce.number().int().min(10).max(3_600_000).default(600_000),
});
export type Config = Omit<z.infer<typeof ConfigSchema>, 'SVC_FRONTEND_URL'> & { SVC_FRONTEND_URL: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment; a missing or malformed value stops start-up with a message naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = env[key];
    if (value !== undefined) picked[key] = value;
  }
  const result = ConfigSchema.safeParse(picked);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return { ...result.data, SVC_FRONTEND_URL: result.data.SVC_FRONTEND_URL ?? result.data.SVC_BACKEND_URL };
}

/**
 * Where the metrics store is written and read: SVC_TSDB_WRITE_URL and SVC_TSDB_READ_URL, each defaulting to
 * SVC_TSDB_URL (a single-node VictoriaMetrics serves both). The one place that decides them: every Tsdb the services
 * open takes these.
 */
export function tsdbBases(config: Pick<Config, 'SVC_TSDB_URL' | 'SVC_TSDB_WRITE_URL' | 'SVC_TSDB_READ_URL'>): {
  write: string;
  read: string;
} {
  return {
    write: config.SVC_TSDB_WRITE_URL ?? config.SVC_TSDB_URL,
    read: config.SVC_TSDB_READ_URL ?? config.SVC_TSDB_URL,
  };
}

/** SVC_* names read by the scripts rather than the services (scripts/setup.sh). */
// Read by scripts, tools and tests, never by a service: the set-up exports them.
const SCRIPT_VARIABLES = new Set(['SVC_SETUP_QUIET', 'SVC_SETUP_WAIT', 'SVC_NATS_ADMIN_CREDS']);

/** SVC_* variables set in `env` that nothing reads: most likely a typo (SVC_ENABLE_DEBUG_ENDPOINT), worth a warning. */
export function unknownVariables(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(env)
    .filter((k) => k.startsWith('SVC_') && !Object.hasOwn(ConfigSchema.shape, k) && !SCRIPT_VARIABLES.has(k))
    .sort();
}

/** Secrets the identity domain cannot run without; checked only by processes that need them. */
export function requireSecrets<K extends 'SVC_JWT_SECRET' | 'SVC_MFA_ENCRYPTION_KEY' | 'SVC_CONTEXT_KEY'>(
  config: Config,
  keys: readonly K[],
): { [P in K]: string } {
  const missing = keys.filter((k) => !config[k]);
  if (missing.length > 0)
    throw new ConfigError(`invalid configuration:\n  ${missing.map((k) => `${k}: is required`).join('\n  ')}`);
  return Object.fromEntries(keys.map((k) => [k, config[k] as string])) as { [P in K]: string };
}
