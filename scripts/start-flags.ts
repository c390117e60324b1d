import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How `npm start` runs the system's process, read from scripts/start.sh (the one place it is written): its NODE_OPTIONS
 * and the flags it gives node before main.ts. The bench starts its systems with them and a test holds the Dockerfile
 * to them, so what is measured and what is shipped run as `npm start` does.
 */
export function startFlags(root = join(import.meta.dirname, '..')): { nodeOptions: string; flags: string[] } {
  const script = readFileSync(join(root, 'scripts/start.sh'), 'utf8');
  const options = /^export NODE_OPTIONS="([^"$]*)/m.exec(script);
  const exec = /^exec node (.*)main\.ts$/m.exec(script);
  if (!options || !exec) throw new Error('scripts/start.sh: no `export NODE_OPTIONS="…` or `exec node … main.ts` line');
  return { nodeOptions: options[1]!.trim(), flags: exec[1]!.split(' ').filter((f) => f !== '') };
}
