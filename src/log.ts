/**
 * pino JSON logs. Redaction is the last line of defence: code never logs phone
 * numbers, bodies or coordinates on purpose, and these paths catch it if it does.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'phone',
  '*.phone',
  'to',
  '*.to',
  'body',
  '*.body',
  'message',
  'location',
  '*.location',
  'lat',
  'lng',
  '*.lat',
  '*.lng',
  'authToken',
  '*.authToken',
  'apiKey',
  '*.apiKey',
];

export function createLogger(opts: { level: string; base?: Record<string, unknown> }, dest?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level: opts.level,
      base: opts.base ?? {},
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest ?? process.stdout,
  );
}
