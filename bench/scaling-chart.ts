// The fleet's scaling curve as a small chart (docs/fleet-scaling.png): `npm run bench:report` draws it from the same
// figures as the table, as SVG, and has Chromium (the one the invoices' PDFs use) turn it into a PNG.
import type { FleetFigures } from './fleet.ts';
import { bareBrowser } from './browser.ts';

export const SCALING_CHART = 'docs/fleet-scaling.png' as const;

interface Series {
  label: string;
  colour: string;
  values: number[];
  dashed?: boolean;
}
interface Panel {
  title: string;
  unit: string;
  series: Series[];
}

const W = 300;
const H = 220;
const PAD = { left: 52, right: 14, top: 34, bottom: 58 };
const escape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** A round axis maximum above `max`: 1, 2 or 5 times a power of ten. */
function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return ([1, 2, 5, 10].find((m) => m * p >= max) ?? 10) * p;
}

function panelSvg(panel: Panel, agents: number[], x0: number): string {
  const top = niceMax(Math.max(...panel.series.flatMap((s) => s.values.filter(Number.isFinite))) * 1.1);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const maxAgents = Math.max(...agents);
  const px = (a: number): number => x0 + PAD.left + (a / maxAgents) * plotW;
  const py = (v: number): number => PAD.top + plotH - (v / top) * plotH;
  const out: string[] = [
    `<text x="${x0 + W / 2}" y="18" text-anchor="middle" font-weight="600">${escape(panel.title)}</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (top / 4) * i;
    out.push(
      `<line x1="${px(0)}" x2="${px(maxAgents)}" y1="${py(v)}" y2="${py(v)}" stroke="#e4e4e4"/>`,
      `<text x="${px(0) - 6}" y="${py(v) + 4}" text-anchor="end">${Number(v.toPrecision(3))}</text>`,
    );
  }
  for (const a of agents) out.push(`<text x="${px(a)}" y="${PAD.top + plotH + 16}" text-anchor="middle">${a}</text>`);
  out.push(
    `<text x="${px(maxAgents / 2)}" y="${PAD.top + plotH + 32}" text-anchor="middle" fill="#555">agents</text>`,
    `<text x="${x0 + 12}" y="${PAD.top + plotH / 2}" text-anchor="middle" fill="#555" transform="rotate(-90 ${x0 + 12} ${PAD.top + plotH / 2})">${escape(panel.unit)}</text>`,
  );
  panel.series.forEach((s, i) => {
    const points = s.values.map((v, j) => `${px(agents[j]!).toFixed(1)},${py(v).toFixed(1)}`).join(' ');
    out.push(
      `<polyline points="${points}" fill="none" stroke="${s.colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 4"' : ''}/>`,
      ...s.values.map((v, j) => `<circle cx="${px(agents[j]!)}" cy="${py(v)}" r="3" fill="${s.colour}"/>`),
      `<text x="${x0 + PAD.left + (i % 2) * 120}" y="${H - 4 - (i < 2 ? 10 : 0)}" fill="${s.colour}">${escape(s.label)}</text>`,
    );
  });
  return out.join('\n');
}

/** Three panels over the agent counts: CPU per heartbeat, heartbeat lag, backlog and memory. */
export function scalingChartSvg(sizes: FleetFigures[], title: string): string {
  const agents = sizes.map((s) => s.agents);
  const panels: Panel[] = [
    {
      // Per 1,000 samples is the same CPU in another unit (the table has it): one line keeps the scale readable.
      title: 'CPU of the ingesting process',
      unit: 'ms per heartbeat',
      series: [
        {
          label: 'per heartbeat (with its metric batch)',
          colour: '#1f6fb2',
          values: sizes.map((s) => s.cpuMsPerHeartbeat),
        },
      ],
    },
    {
      title: 'heartbeat → visible in the API',
      unit: 'ms',
      series: [
        { label: 'p50', colour: '#1f6fb2', values: sizes.map((s) => s.lagMs.p50) },
        { label: 'p99', colour: '#c23b22', values: sizes.map((s) => s.lagMs.p99) },
        { label: 'target p99 2,000', colour: '#999', values: sizes.map(() => 2000), dashed: true },
      ],
    },
    {
      title: 'backlog and memory',
      unit: 'messages / MiB',
      series: [
        { label: 'backlog, 2nd half', colour: '#6a3d9a', values: sizes.map((s) => s.backlogSecondHalf) },
        { label: 'RSS MiB', colour: '#33a02c', values: sizes.map((s) => s.rssMiB.mean) },
      ],
    },
  ];
  const width = W * panels.length;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 22}" viewBox="0 0 ${width} ${H + 22}" font-family="DejaVu Sans, sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<g transform="translate(0 22)">`,
    ...panels.map((p, i) => panelSvg(p, agents, i * W)),
    `</g>`,
    `<text x="${width / 2}" y="14" text-anchor="middle" fill="#333">${escape(title)}</text>`,
    `</svg>`,
  ].join('\n');
}

/** The SVG as a PNG at twice its size, through a headless Chromium set up as the bench's bare renderer. */
export async function svgToPng(svg: string, path: `${string}.png`, executablePath: string): Promise<void> {
  const { page, close } = await bareBrowser(executablePath);
  try {
    const [, width = '900', height = '240'] = /width="(\d+)" height="(\d+)"/.exec(svg) ?? [];
    const clip = { x: 0, y: 0, width: Number(width), height: Number(height) };
    await page.setViewport({ width: clip.width, height: clip.height, deviceScaleFactor: 2 });
    await page.setContent(`<!doctype html><html><body style="margin:0">${svg}</body></html>`);
    await page.screenshot({ path, clip });
  } finally {
    await close();
  }
}
