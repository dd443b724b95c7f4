import type { Clock } from '../broker/clock.js';
import { addUnknownOptions } from '../core/errors.js';
import { ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';

/** The levels the worker logs at. */
export type LogLevel = 'info' | 'warn' | 'error';

/** What the worker logs through: pino and most structured loggers fit as they are. */
export interface Logger {
  /** A line at level info: structured fields, then the message. */
  info(fields: Record<string, unknown>, message: string): void;
  /** A line at level warn. */
  warn(fields: Record<string, unknown>, message: string): void;
  /** A line at level error. */
  error(fields: Record<string, unknown>, message: string): void;
  /**
   * Optional (pino has it): false when lines of `level` are dropped, so the worker does not
   * build them. Without it every line is built and handed over.
   */
  isLevelEnabled?(level: LogLevel): boolean;
}

/** What `jsonLogger` takes. */
export interface JsonLoggerOptions {
  /** Where lines go. Default process.stderr. */
  write?: (line: string) => void;
  /** The `time` of each line (ms). Default: no time field. */
  clock?: Clock;
  /** The lowest level written: 'info' (default), 'warn' or 'error'; any other is refused. */
  level?: LogLevel;
}

const LOG_LEVELS: readonly LogLevel[] = ['info', 'warn', 'error'];
const RANK: Record<LogLevel, number> = { info: 0, warn: 1, error: 2 };

const OPTION_NAMES = new Set(['write', 'clock', 'level']);

/**
 * A tiny logger: one JSON object per line, `{level, time?, msg, ...fields}`. Throws a
 * ValidationError, listing every problem, for options it cannot write with: not an object, a
 * name it does not know, a `write` that is not a function, a `clock` without `now()`, or a
 * level it does not know.
 */
export function jsonLogger(options: JsonLoggerOptions = {}): Logger {
  checkOptions(options);
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const { level = 'info' } = options;
  const lowest = RANK[level];
  const line = (level: LogLevel) => (fields: Record<string, unknown>, message: string) => {
    if (RANK[level] < lowest) return;
    const time = options.clock?.now();
    write(
      `${safeJson({ level, ...(time === undefined ? {} : { time }), msg: message, ...fields })}\n`,
    );
  };
  return {
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    isLevelEnabled: (level) => RANK[level] >= lowest,
  };
}

/** Logs nothing: `logger: silentLogger`. */
export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
  isLevelEnabled: () => false,
};

/** Whether `logger` wants lines of `level` (true when it cannot say). */
export function isLevelEnabled(logger: Logger, level: LogLevel): boolean {
  return typeof logger.isLevelEnabled !== 'function' || logger.isLevelEnabled(level) !== false;
}

/**
 * Refused here, not at the first line: the worker drops a line its logger fails to write (a
 * failing logger must not stop it), so a bad `write` or `clock` would lose every line unseen.
 */
function checkOptions(options: unknown): asserts options is JsonLoggerOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`jsonLogger: options must be an object, got ${show(options)}`);
  }
  const issues: string[] = [];
  addUnknownOptions(issues, Object.keys(options), (name) => OPTION_NAMES.has(name));
  const { write, clock, level } = options as Record<string, unknown>;
  if (write !== undefined && typeof write !== 'function') {
    issues.push(`write must be a function, got ${show(write)}`);
  }
  if (
    clock !== undefined &&
    (typeof clock !== 'object' ||
      clock === null ||
      typeof (clock as { now?: unknown }).now !== 'function')
  ) {
    issues.push(`clock must have now(), got ${show(clock)}`);
  }
  // An unknown level has no rank: every comparison with it is false, so every line, errors
  // too, would be dropped.
  if (level !== undefined && !LOG_LEVELS.includes(level as LogLevel)) {
    const allowed = LOG_LEVELS.map((known) => `'${known}'`).join(', ');
    issues.push(`level must be one of ${allowed}, got ${show(level)}`);
  }
  if (issues.length > 0) {
    throw new ValidationError(issues.map((issue) => `jsonLogger: ${issue}`));
  }
}

/**
 * The line as JSON. A field that cannot be written (a cycle, a BigInt, a toJSON that throws: a
 * progress report kept for a lease-lost line, say) is written as UNSERIALISABLE, and the rest of
 * the line as it is: its level, message, queue and job stay there to be read and alerted on.
 */
function safeJson(line: Record<string, unknown>): string {
  try {
    return JSON.stringify(line);
  } catch {
    // Field by field, below.
  }
  const written: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(line)) {
    let field: unknown = value;
    try {
      JSON.stringify(value);
    } catch {
      field = UNSERIALISABLE;
    }
    // A field named __proto__ is a field like any other.
    Object.defineProperty(written, name, {
      value: field,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  try {
    return JSON.stringify(written);
  } catch {
    return JSON.stringify({ level: 'error', msg: 'log line could not be serialised' });
  }
}

/** What a field that cannot be written as JSON is written as. */
const UNSERIALISABLE = '[unserialisable]';
