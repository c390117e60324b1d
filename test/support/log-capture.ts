import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { createLogger } from '../../platform/logger.ts';

/** One log record as pino writes it: its level, message and whatever fields were logged with it. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A sink keeping every line as written (`raw`) and parsed (`lines`). */
function sink<L extends LogLine>(): { stream: Writable; lines: L[]; raw: string[] } {
  const lines: L[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as L);
      }
      done();
    },
  });
  return { stream, lines, raw };
}

/** A logger at `level` whose records are kept, parsed, in `lines` (for tests that check what was logged). */
export function capturingLogger<L extends LogLine = LogLine>(level = 'debug'): { log: Logger; lines: L[] } {
  const { stream, lines } = sink<L>();
  return { log: pino({ level }, stream), lines };
}

/** The services' own logger (createLogger: name, pid, time), its lines kept as written and parsed. */
export function capturingServiceLogger<L extends LogLine = LogLine>(
  level = 'debug',
): { log: Logger; lines: L[]; raw: string[] } {
  const { stream, lines, raw } = sink<L>();
  return { log: createLogger(level, 'svc', stream), lines, raw };
}

/**
 * Keys that occur more than once at the top level of a JSON object's text, each as often as it repeats. JSON.parse
 * keeps the last of them silently, so this reads the text itself: strings are skipped whole, nesting is counted.
 */
export function repeatedTopLevelKeys(json: string): string[] {
  const seen = new Set<string>();
  const repeated: string[] = [];
  let depth = 0;
  let keyNext = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      let end = i + 1;
      while (end < json.length && json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      if (depth === 1 && keyNext) {
        const key = JSON.parse(json.slice(i, end + 1)) as string;
        if (seen.has(key)) repeated.push(key);
        seen.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      depth++;
      keyNext = depth === 1 && c === '{';
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      keyNext = true;
    }
  }
  return repeated;
}
