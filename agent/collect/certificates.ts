import { X509Certificate } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CertificateIn } from './contract-inputs.ts';
import { listDir, type Roots } from './read.ts';

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const CURVE_BITS: Record<string, number> = {
  prime256v1: 256,
  secp256k1: 256,
  secp384r1: 384,
  secp521r1: 521,
  'P-256': 256,
  'P-384': 384,
  'P-521': 521,
};
const MAX_CERTS = 5_000;
/** A bigger file is not a certificate store (the Debian bundle is ~220 KB). */
const MAX_FILE = 4 * 1024 * 1024;

const oneLine = (dn: string): string =>
  dn
    .split('\n')
    .filter((p) => p !== '')
    .join(', ');

/** One certificate record; null when the block does not parse. */
export function certificateRecord(pem: string, path: string): CertificateIn | null {
  let c: X509Certificate;
  try {
    c = new X509Certificate(pem);
  } catch {
    return null;
  }
  const key = c.publicKey;
  const type = key.asymmetricKeyType ?? 'unknown';
  const d = key.asymmetricKeyDetails;
  const bits =
    d?.modulusLength ??
    (d?.namedCurve ? CURVE_BITS[d.namedCurve] : undefined) ??
    (type === 'ed25519' ? 256 : type === 'ed448' ? 456 : undefined);
  const from = new Date(c.validFrom);
  const to = new Date(c.validTo);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) return null;
  return {
    subject: oneLine(c.subject).slice(0, 1024),
    issuer: oneLine(c.issuer).slice(0, 1024),
    not_before: from.toISOString(),
    not_after: to.toISOString(),
    fingerprint_sha256: c.fingerprint256.toUpperCase(),
    is_ca: c.ca,
    key_algorithm: type.slice(0, 64),
    key_bits: bits ?? null,
    path: path.slice(0, 1024),
  };
}

/** Certificates of a PEM text; blocks already in `seenBlocks` (same base64 body) are skipped without parsing. */
export function certificatesIn(text: string, path: string, seenBlocks = new Set<string>()): CertificateIn[] {
  const out: CertificateIn[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    const body = m[0].replace(/\s+/g, '');
    if (seenBlocks.has(body)) continue;
    seenBlocks.add(body);
    const r = certificateRecord(m[0], path);
    if (r) out.push(r);
  }
  return out;
}

/** Certificate files in a directory (one level; .pem and .crt): the hash links (`abcd1234.0`) point at the same files. */
async function certFiles(dir: string): Promise<string[]> {
  const isCert = (n: string) => /\.(pem|crt)$/i.test(n);
  const entries = (await listDir(dir)).sort();
  const nested = await Promise.all(
    entries
      .filter((n) => !isCert(n) && !n.startsWith('.'))
      .map(async (n) => {
        const p = join(dir, n);
        try {
          return (await stat(p)).isDirectory()
            ? (await listDir(p))
                .filter(isCert)
                .sort()
                .map((x) => join(p, x))
            : [];
        } catch {
          return [];
        }
      }),
  );
  return [...entries.filter(isCert).map((n) => join(dir, n)), ...nested.flat()];
}

/**
 * X.509 certificates of the trust stores and well-known service locations: /etc/ssl/certs, /etc/pki/tls/certs,
 * /usr/local/share/ca-certificates, /etc/letsencrypt/live/<name>. Each certificate once (by SHA-256 fingerprint, at
 * the first path found: single-certificate files before bundles); files are read once even when linked many times.
 */
export async function collectCertificates(
  roots: Roots,
  extraDirs: string[] = ['/usr/local/share/ca-certificates'],
): Promise<CertificateIn[]> {
  const dirs = [
    join(roots.etc, 'ssl', 'certs'),
    join(roots.etc, 'pki', 'tls', 'certs'),
    ...extraDirs,
    join(roots.etc, 'letsencrypt', 'live'),
  ];
  const files = (await Promise.all(dirs.map(certFiles))).flat();
  const seenFiles = new Set<string>();
  const texts: { path: string; text: string }[] = [];
  for (const path of files) {
    try {
      const real = await realpath(path);
      if (seenFiles.has(real)) continue;
      seenFiles.add(real);
      if ((await stat(real)).size > MAX_FILE) continue;
      texts.push({ path, text: await readFile(real, 'utf8') });
    } catch {
      // unreadable or dangling link: skipped
    }
  }
  const count = (t: string) => t.split('-----BEGIN CERTIFICATE-----').length - 1;
  texts.sort((a, b) => Number(count(a.text) > 1) - Number(count(b.text) > 1));
  const seen = new Set<string>();
  const blocks = new Set<string>();
  const out: CertificateIn[] = [];
  for (const { path, text } of texts) {
    for (const c of certificatesIn(text, path, blocks)) {
      if (seen.has(c.fingerprint_sha256)) continue;
      seen.add(c.fingerprint_sha256);
      out.push(c);
      if (out.length >= MAX_CERTS) return out;
    }
  }
  return out;
}
