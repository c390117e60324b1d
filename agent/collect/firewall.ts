import type { FirewallRuleIn } from './contract-inputs.ts';
import { run } from './read.ts';

/** Shell-like split that keeps "quoted strings" (iptables-save quotes comments) as one token. */
function tokens(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g))
    out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!);
  return out;
}

const after = (t: string[], ...flags: string[]): string => {
  for (const f of flags) {
    const i = t.indexOf(f);
    if (i >= 0 && t[i + 1] !== undefined) return t[i + 1]!;
  }
  return '';
};

/**
 * iptables-save / ip6tables-save: `*table`, `:CHAIN POLICY [p:b]`, `-A CHAIN ...` rules. Rules are numbered per table
 * and chain from 1 (the order `iptables -L --line-numbers` shows); port is the destination port(s) (--dport/--dports).
 */
export function parseIptablesSave(text: string, tool = 'iptables'): FirewallRuleIn[] {
  const out: FirewallRuleIn[] = [];
  let table = '';
  const counters = new Map<string, number>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('*')) table = line.slice(1);
    if (!line.startsWith('-A ')) continue;
    const t = tokens(line);
    const chain = t[1] ?? '';
    const key = `${table}/${chain}`;
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n);
    out.push({
      chain: chain.slice(0, 128),
      rule_number: n,
      target: after(t, '-j', '--jump', '-g', '--goto').slice(0, 128),
      protocol: after(t, '-p', '--protocol').slice(0, 32),
      port: after(t, '--dport', '--destination-port', '--dports', '--destination-ports').slice(0, 64),
      tool,
      table_name: table.slice(0, 64),
      rule_text: line.slice(0, 4096),
    });
  }
  return out;
}

const VERDICT = /\b(accept|drop|reject|return|queue|continue|masquerade|snat|dnat|redirect|jump\s+\S+|goto\s+\S+)\b/g;

/** `nft list ruleset` text: rules are the statement lines inside `chain` blocks (sets, maps and chain headers skipped). */
export function parseNftRuleset(text: string): FirewallRuleIn[] {
  const out: FirewallRuleIn[] = [];
  let table = '';
  let chain: string | null = null;
  let depth = 0;
  let chainDepth = -1;
  let n = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const opens = (line.match(/\{/g) ?? []).length;
    const closes = (line.match(/\}/g) ?? []).length;
    const tableM = /^table\s+(\S+)\s+(\S+)\s*\{$/.exec(line);
    const chainM = /^chain\s+(\S+)\s*\{$/.exec(line);
    if (tableM) table = `${tableM[1]} ${tableM[2]}`;
    else if (chainM && table) {
      chain = chainM[1]!;
      chainDepth = depth + 1;
      n = 0;
    } else if (
      chain !== null &&
      depth === chainDepth &&
      line !== '' &&
      line !== '}' &&
      !/^(type|policy|comment|devices?)\b/.test(line) &&
      !line.startsWith('#')
    ) {
      const verdicts = [...line.matchAll(VERDICT)].map((m) => m[1]!);
      const proto =
        /\b(?:meta\s+l4proto|ip\s+protocol|ip6\s+nexthdr)\s+(\S+)/.exec(line)?.[1] ??
        /\b(tcp|udp|sctp|icmpv6|icmp)\b/.exec(line)?.[1] ??
        '';
      const port = /\bdport\s+(\{[^}]*\}|\S+)/.exec(line)?.[1]?.replace(/[{}\s]/g, '') ?? '';
      out.push({
        chain: chain.slice(0, 128),
        rule_number: ++n,
        target: (verdicts.at(-1) ?? '').replace(/\s+/, ' ').slice(0, 128),
        protocol: proto.slice(0, 32),
        port: port.slice(0, 64),
        tool: 'nftables',
        table_name: table.slice(0, 64),
        rule_text: line.slice(0, 4096),
      });
    }
    depth += opens - closes;
    if (chain !== null && depth < chainDepth) chain = null;
  }
  return out;
}

/**
 * Firewall rules: iptables-save and ip6tables-save (legacy or nft-backed) when they show rules, else the native
 * nftables ruleset. Absent tools or no permission (both need root) → empty.
 */
export async function collectFirewall(): Promise<FirewallRuleIn[]> {
  const [v4, v6] = await Promise.all([run('iptables-save', []), run('ip6tables-save', [])]);
  const rules = [
    ...(v4?.code === 0 ? parseIptablesSave(v4.stdout, 'iptables') : []),
    ...(v6?.code === 0 ? parseIptablesSave(v6.stdout, 'ip6tables') : []),
  ];
  if (rules.length > 0) return rules.slice(0, 10_000);
  const nft = await run('nft', ['list', 'ruleset']);
  return nft?.code === 0 ? parseNftRuleset(nft.stdout).slice(0, 10_000) : [];
}
