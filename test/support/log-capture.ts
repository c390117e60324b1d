import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** One log record as pino writes it: its level, message and whatever fields were logged with it. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A logger at `level` whose records are kept, parsed, in `lines` (for tests that check what was logged). */
export function capturingLogger<L extends LogLine = LogLine>(level = 'debug'): { log: Logger; lines: L[] } {
  const lines: L[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as L);
      done();
    },
  });
  return { log: pino({ level }, sink), lines };
}
