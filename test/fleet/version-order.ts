/**
 * Debian's version comparison (dpkg --compare-versions; lib/dpkg/version.c), the reference the SQL sort key
 * `pql_version_key` is checked against: epoch, then upstream version, then revision, each with verrevcmp.
 */

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isAlpha = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
/** `~` before everything, even the end; letters before other characters. */
const order = (c: string | undefined): number =>
  c === undefined || isDigit(c) ? 0 : isAlpha(c) ? c.charCodeAt(0) : c === '~' ? -1 : c.charCodeAt(0) + 256;

function verrevcmp(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    let firstDiff = 0;
    while ((i < a.length && !isDigit(a[i]!)) || (j < b.length && !isDigit(b[j]!))) {
      const ac = order(a[i]);
      const bc = order(b[j]);
      if (ac !== bc) return ac - bc;
      i++;
      j++;
    }
    while (a[i] === '0') i++;
    while (b[j] === '0') j++;
    while (i < a.length && j < b.length && isDigit(a[i]!) && isDigit(b[j]!)) {
      if (!firstDiff) firstDiff = a.charCodeAt(i) - b.charCodeAt(j);
      i++;
      j++;
    }
    if (i < a.length && isDigit(a[i]!)) return 1;
    if (j < b.length && isDigit(b[j]!)) return -1;
    if (firstDiff) return firstDiff;
  }
  return 0;
}

function parse(v: string): { epoch: bigint; upstream: string; revision: string } {
  const m = /^(\d+):(.*)$/s.exec(v);
  const epoch = m ? BigInt(m[1]!) : 0n;
  const rest = m ? m[2]! : v;
  const dash = rest.lastIndexOf('-');
  return dash < 0
    ? { epoch, upstream: rest, revision: '' }
    : { epoch, upstream: rest.slice(0, dash), revision: rest.slice(dash + 1) };
}

/** -1, 0 or 1, as dpkg orders `a` and `b`. */
export function compareDebianVersions(a: string, b: string): number {
  const x = parse(a);
  const y = parse(b);
  if (x.epoch !== y.epoch) return x.epoch < y.epoch ? -1 : 1;
  return Math.sign(verrevcmp(x.upstream, y.upstream) || verrevcmp(x.revision, y.revision));
}
