import type { Clock } from '../broker/clock.js';

/** What the worker logs through: pino and most structured loggers fit as they are. */
export interface Logger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface JsonLoggerOptions {
  /** Where lines go. Default process.stderr. */
  write?: (line: string) => void;
  /** The `time` of each line (ms). Default: no time field. */
  clock?: Clock;
}

/** A tiny logger: one JSON object per line, `{level, time?, msg, ...fields}`. */
export function jsonLogger(options: JsonLoggerOptions = {}): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const line = (level: string) => (fields: Record<string, unknown>, message: string) => {
    const time = options.clock?.now();
    write(
      `${safeJson({ level, ...(time === undefined ? {} : { time }), msg: message, ...fields })}\n`,
    );
  };
  return { info: line('info'), warn: line('warn'), error: line('error') };
}

/** Logs nothing: `logger: silentLogger`. */
export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
};

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return JSON.stringify({ level: 'error', msg: 'log line could not be serialised' });
  }
}
