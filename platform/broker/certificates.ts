import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';

/**
 * The broker's TLS material for a local or single-site installation: a CA made once (its key never leaves the trust
 * directory) and a server certificate it signs, for every name and address clients and cluster peers use. Made with
 * the openssl CLI (Node has no X.509 writer). Like the keys, the CA is kept: agents pin it at enrolment, so a new CA
 * would cut every enrolled agent off. The server certificate is re-issued from the same CA when its names change or it
 * nears its end.
 */
/** `openssl req` arguments for a new unencrypted P-256 key written to `keyFile` (the CA's and the server's alike). */
const newEcKey = (keyFile: string): string[] => [
  '-newkey',
  'ec',
  '-pkeyopt',
  'ec_paramgen_curve:P-256',
  '-nodes',
  '-keyout',
  keyFile,
];

export const TLS_FILES = {
  ca: 'ca.pem',
  caKey: 'ca-key.pem',
  cert: 'server.pem',
  key: 'server-key.pem',
} as const;

/** Names every local broker answers to; docker-compose's node names are added by its init step (--san). */
export const DEFAULT_SANS = ['localhost', '127.0.0.1', '::1'];

const CA_DAYS = 3650;
const SERVER_DAYS = 825;
/** A server certificate with less than this left is re-issued at the next start. */
const RENEW_BEFORE_MS = 30 * 86_400_000;

export interface BrokerTlsFiles {
  cert: string;
  key: string;
  /** The CA that signed `cert`; an operator's certificate from a public CA may come without one. */
  ca?: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(
      `openssl ${args[0]} failed: ${stderr || (err instanceof Error ? err.message : String(err))} (the broker's certificates need the openssl CLI)`,
    );
  }
}

/** `IP:` or `DNS:` and the name; IPv6 in its compressed form, as the URL parser writes it (openssl prints it long). */
const sanEntry = (name: string): string =>
  isIP(name) === 6
    ? `IP:${new URL(`http://[${name}]`).hostname.slice(1, -1)}`
    : isIP(name)
      ? `IP:${name}`
      : `DNS:${name}`;

/** The SAN names a certificate covers, as openssl prints them (`DNS:x`, `IP Address:y`), normalised to sanEntry's form. */
function sansOf(pem: string): Set<string> {
  const text = new X509Certificate(pem).subjectAltName ?? '';
  return new Set(
    text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => (s.startsWith('IP Address:') ? sanEntry(s.slice('IP Address:'.length)) : s)),
  );
}

function needsServerCert(dir: string, sans: string[]): boolean {
  const certPath = join(dir, TLS_FILES.cert);
  if (!existsSync(certPath) || !existsSync(join(dir, TLS_FILES.key))) return true;
  const pem = readFileSync(certPath, 'utf8');
  const cert = new X509Certificate(pem);
  const ca = new X509Certificate(readFileSync(join(dir, TLS_FILES.ca)));
  if (!cert.verify(ca.publicKey)) return true;
  if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return true;
  const have = sansOf(pem);
  return sans.some((s) => !have.has(sanEntry(s)));
}

/**
 * Makes the CA when it is missing and (re)issues the server certificate when it is missing, signed by another CA,
 * near its end, or lacking one of `sans`. Files are mode 600 and replaced atomically. Returns absolute paths.
 */
export function ensureBrokerCertificates(
  dir: string,
  sans: string[] = DEFAULT_SANS,
): Required<BrokerTlsFiles> & { issued: boolean } {
  const names = [...new Set([...DEFAULT_SANS, ...sans])];
  const files = { ca: join(dir, TLS_FILES.ca), cert: join(dir, TLS_FILES.cert), key: join(dir, TLS_FILES.key) };
  let issued = false;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(files.ca) || !existsSync(join(dir, TLS_FILES.caKey))) {
    const tmp = `.ca-${process.pid}`;
    openssl(
      [
        'req',
        '-x509',
        ...newEcKey(`${tmp}-key.pem`),
        '-out',
        `${tmp}.pem`,
        '-days',
        String(CA_DAYS),
        '-subj',
        '/CN=svc broker CA',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ],
      dir,
    );
    renameSync(join(dir, `${tmp}-key.pem`), join(dir, TLS_FILES.caKey));
    renameSync(join(dir, `${tmp}.pem`), files.ca);
    issued = true;
  }
  if (issued || needsServerCert(dir, names)) {
    const tmp = `.server-${process.pid}`;
    // Server and client use: cluster routes present the same certificate to each other (mutual TLS).
    const ext = [
      `subjectAltName=${names.map(sanEntry).join(',')}`,
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth,clientAuth',
      '',
    ].join('\n');
    writeFileSync(join(dir, `${tmp}.ext`), ext, { mode: 0o600 });
    try {
      openssl(['req', ...newEcKey(`${tmp}-key.pem`), '-out', `${tmp}.csr`, '-subj', '/CN=svc broker'], dir);
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${tmp}.csr`,
          '-CA',
          TLS_FILES.ca,
          '-CAkey',
          TLS_FILES.caKey,
          '-set_serial',
          `0x${Date.now().toString(16)}`,
          '-days',
          String(SERVER_DAYS),
          '-extfile',
          `${tmp}.ext`,
          '-out',
          `${tmp}.pem`,
        ],
        dir,
      );
      renameSync(join(dir, `${tmp}-key.pem`), files.key);
      renameSync(join(dir, `${tmp}.pem`), files.cert);
    } finally {
      for (const f of [`${tmp}.ext`, `${tmp}.csr`, `${tmp}-key.pem`, `${tmp}.pem`])
        rmSync(join(dir, f), { force: true });
    }
    issued = true;
  }
  for (const f of Object.values(TLS_FILES)) if (existsSync(join(dir, f))) chmodSync(join(dir, f), 0o600);
  return { ...files, issued };
}
