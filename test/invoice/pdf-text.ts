import { inflateSync } from 'node:zlib';

/**
 * Reads the text back out of a Chromium PDF with no package: inflates every Flate stream, reads the fonts' ToUnicode
 * CMaps (bfchar and bfrange) and decodes the hex strings of the text operators (Tj, TJ) with them. Enough for the
 * PDFs our template prints (Chromium writes Identity-H fonts with a ToUnicode map each); not a general PDF parser.
 */
export function pdfText(pdf: Buffer): { text: string; pages: number } {
  const raw = pdf.toString('latin1');
  const streams: string[] = [];
  const re = /(?<!end)stream\r?\n/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(raw))) {
    const start = m.index + m[0].length;
    const end = raw.indexOf('endstream', start);
    if (end < 0) break;
    const body = pdf.subarray(start, end);
    try {
      streams.push(inflateSync(body).toString('latin1'));
    } catch {
      streams.push(body.toString('latin1'));
    }
    re.lastIndex = end;
  }
  const all = [raw, ...streams].join('\n');
  const pages = (all.match(/\/Type\s*\/Page(?![s\w])/g) ?? []).length;
  const cmaps = streams.filter((s) => s.includes('begincmap')).map(parseCMap);
  const chunks: string[] = [];
  for (const s of streams) {
    if (s.includes('begincmap')) continue;
    for (const t of s.matchAll(/\[((?:[^\]])*)\]\s*TJ|<([0-9A-Fa-f]+)>\s*Tj/g)) {
      const hexes = t[1] !== undefined ? [...t[1].matchAll(/<([0-9A-Fa-f]+)>/g)].map((h) => h[1]!) : [t[2]!];
      // Each text run is in one font: the CMap that decodes all of its glyphs is that font's.
      const codes = hexes.flatMap((h) => h.match(/.{4}/g) ?? []).map((c) => parseInt(c, 16));
      const map = cmaps.find((cm) => codes.every((c) => cm.has(c)));
      if (map) chunks.push(codes.map((c) => map.get(c)!).join(''));
    }
  }
  return { text: chunks.join(' '), pages };
}

function parseCMap(s: string): Map<number, string> {
  const map = new Map<number, string>();
  const u = (hex: string): string => String.fromCodePoint(...(hex.match(/.{4}/g) ?? []).map((h) => parseInt(h, 16)));
  for (const block of s.matchAll(/beginbfchar([\s\S]*?)endbfchar/g)) {
    for (const e of block[1]!.matchAll(/<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>/g)) map.set(parseInt(e[1]!, 16), u(e[2]!));
  }
  for (const block of s.matchAll(/beginbfrange([\s\S]*?)endbfrange/g)) {
    for (const e of block[1]!.matchAll(/<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>/g)) {
      const lo = parseInt(e[1]!, 16);
      const hi = parseInt(e[2]!, 16);
      const first = parseInt(e[3]!, 16);
      for (let c = lo; c <= hi; c++) map.set(c, String.fromCodePoint(first + c - lo));
    }
  }
  return map;
}
