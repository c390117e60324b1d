import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = process.env.SVC_LOG_LEVEL ?? 'info', name = 'svc'): Logger {
  return pino({ name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}
