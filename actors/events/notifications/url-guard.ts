import { promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * SSRF rules for the URLs notifications are sent to (webhooks, chat): a tenant must not make the platform call its
 * own loopback, metadata service or private network. The check resolves the host once; `pinnedLookup` then makes
 * the request connect only to those checked addresses, so a DNS answer that changes in between (rebinding) is moot.
 */

export type ResolvedAddress = { address: string; family: 4 | 6 };
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;
export type UrlPolicy = { allowHttp: boolean; allowPrivate: boolean };
export type UrlCheck = { ok: true; url: URL; addresses: ResolvedAddress[] } | { ok: false; reason: string };

type Range = { kind: string; v4?: [string, number]; v6?: [string, number] };

/** The refused ranges, each with the word used in the reason. */
const RANGES: Range[] = [
  { kind: 'an unspecified', v4: ['0.0.0.0', 8], v6: ['::', 128] },
  { kind: 'a loopback', v4: ['127.0.0.0', 8], v6: ['::1', 128] },
  { kind: 'a link-local', v4: ['169.254.0.0', 16], v6: ['fe80::', 10] },
  { kind: 'a private', v4: ['10.0.0.0', 8] },
  { kind: 'a private', v4: ['172.16.0.0', 12] },
  { kind: 'a private', v4: ['192.168.0.0', 16] },
  { kind: 'a private', v6: ['fc00::', 7] },
  { kind: 'a shared (CGNAT)', v4: ['100.64.0.0', 10] },
  { kind: 'a multicast', v4: ['224.0.0.0', 4], v6: ['ff00::', 8] },
  { kind: 'a broadcast', v4: ['255.255.255.255', 32] },
  // Ranges that are not the public internet either: IETF protocol assignments, benchmarking, reserved, and NAT64,
  // whose addresses lead to whatever IPv4 address they embed.
  { kind: 'a reserved', v4: ['192.0.0.0', 24] },
  { kind: 'a reserved', v4: ['198.18.0.0', 15] },
  { kind: 'a reserved', v4: ['240.0.0.0', 4] },
  { kind: 'a translated (NAT64)', v6: ['64:ff9b::', 96] },
];

const LISTS: { kind: string; list: BlockList }[] = RANGES.map((range) => {
  const list = new BlockList();
  if (range.v4) list.addSubnet(range.v4[0], range.v4[1], 'ipv4');
  if (range.v6) list.addSubnet(range.v6[0], range.v6[1], 'ipv6');
  return { kind: range.kind, list };
});

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d in any spelling), else null. */
function mappedIPv4(address: string): string | null {
  let normal: string;
  try {
    // The URL parser spells IPv6 canonically: ::ffff:10.0.0.5 and 0:0:0:0:0:ffff:a00:5 both become [::ffff:a00:5].
    normal = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(normal);
  if (!hex?.[1] || !hex[2]) return null;
  const hi = parseInt(hex[1], 16);
  const lo = parseInt(hex[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The kind of refused range the address falls in (e.g. "a private"), or null when it is a public address. */
export function refusedRange(address: string, family: 4 | 6): string | null {
  const mapped = family === 6 ? mappedIPv4(address) : null;
  const [addr, type] = mapped
    ? [mapped, 'ipv4' as const]
    : [address, family === 4 ? ('ipv4' as const) : ('ipv6' as const)];
  for (const { kind, list } of LISTS) if (list.check(addr, type)) return kind;
  return null;
}

const defaultResolver: Resolver = async (host) => {
  const answers = await dns.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Checks a target URL against the policy, resolving its host (IP literals without DNS). */
export async function checkTargetUrl(
  url: string,
  policy: UrlPolicy,
  resolve: Resolver = defaultResolver,
): Promise<UrlCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'the URL is not valid' };
  }
  if (parsed.protocol !== 'https:' && !(policy.allowHttp && parsed.protocol === 'http:'))
    return { ok: false, reason: policy.allowHttp ? 'the URL must use http or https' : 'the URL must use https' };
  if (parsed.username !== '' || parsed.password !== '')
    return { ok: false, reason: 'the URL must not contain a user name or password' };
  // URL keeps IPv6 literals in brackets.
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (host === '') return { ok: false, reason: 'the URL has no host' };
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal === 4 || literal === 6) {
    addresses = [{ address: host, family: literal }];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      return {
        ok: false,
        reason: `the host ${host} could not be resolved${typeof code === 'string' ? ` (${code})` : ''}`,
      };
    }
    if (addresses.length === 0) return { ok: false, reason: `the host ${host} could not be resolved` };
  }
  if (!policy.allowPrivate) {
    for (const { address, family } of addresses) {
      const kind = refusedRange(address, family);
      if (kind) {
        const subject = literal ? 'the host is' : 'the host resolves to';
        return { ok: false, reason: `${subject} ${kind} address (${address})` };
      }
    }
  }
  return { ok: true, url: parsed, addresses };
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request / https.request options that answers only the checked addresses, whatever the host
 * name: the connection goes where the check looked, not where a second DNS answer points. Honours `all` and `family`.
 */
export function pinnedLookup(
  addresses: ResolvedAddress[],
): (hostname: string, options: LookupOptions, callback: LookupCallback) => void {
  return (_hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 6 ? options.family : null;
    const matching = wanted === null ? addresses : addresses.filter((a) => a.family === wanted);
    const first = matching[0];
    if (!first) {
      const error: NodeJS.ErrnoException = new Error('no checked address of the requested family');
      error.code = 'ENOTFOUND';
      callback(error, options.all ? [] : '', undefined);
      return;
    }
    if (options.all)
      callback(
        null,
        matching.map((a) => ({ address: a.address, family: a.family })),
      );
    else callback(null, first.address, first.family);
  };
}
