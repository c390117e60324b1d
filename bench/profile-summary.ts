// `node bench/profile-summary.ts <file.cpuprofile> [top] [skip-seconds]`: where a V8 CPU profile's time went, by
// package (or project folder) and by function, as shares of the busy (non-idle) time. Self time only: each sample
// counts once. `skip-seconds` leaves out the profile's first seconds (start-up: module loading and compiling).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, skipArg] = process.argv.slice(2);
if (!file) throw new Error('usage: bench/profile-summary.ts <file.cpuprofile> [top] [skip-seconds]');
const top = Number(topArg ?? 25);
const skipMicros = Number(skipArg ?? 0) * 1e6;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
let at = 0;
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i] ?? 0;
  if (at < skipMicros || byId.get(id)?.callFrame.functionName === '(idle)') return;
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);

/** node_modules/<package>, a project folder, node's internals, or what V8 reports without a script. */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const mod = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (mod) return mod[1]!;
  if (url.startsWith('node:')) return url;
  const project = /\/(actors|gateway|contracts|bench|agent)\/(?:([^/]+)\/)?/.exec(url);
  return project ? `${project[1]}/${project[2] ?? ''}` : url;
}

const areas = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  const a = area(n.callFrame.url, n.callFrame.functionName);
  areas.set(a, (areas.get(a) ?? 0) + t);
  const f = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(actors|gateway|contracts)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
  functions.set(f, (functions.get(f) ?? 0) + t);
}
const show = (m: Map<string, number>): string =>
  [...m.entries()]
    .sort((x, y) => y[1] - x[1])
    .slice(0, top)
    .map(([k, t]) => `${((t / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
console.log(
  `${(total / 1e6).toFixed(1)} s busy\n\n## by area (self)\n${show(areas)}\n\n## by function (self)\n${show(functions)}`,
);
