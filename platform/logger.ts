import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** JSON lines to stdout, or to `destination` (the agent logs to stderr: `pino.destination(2)`). */
export function createLogger(
  level: string = process.env.SVC_LOG_LEVEL ?? 'info',
  name = 'svc',
  destination?: DestinationStream,
): Logger {
  const options = { name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  return destination ? pino(options, destination) : pino(options);
}
