import { UsageError, type Values } from './command.js';

/** An integer flag (milliseconds, counts), or undefined when absent. */
export function integerFlag(
  values: Values,
  name: string,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new UsageError(
      `--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/**
 * Refuses `--name`'s `value` above the server's `limitName` (its maxBatch, maxDelayMs …), which
 * would refuse every request that carries it: before anything is done, as a mistake in the
 * command line, where a command would otherwise get that refusal once for each input or batch.
 */
export function checkServerLimit(
  name: string,
  value: number | undefined,
  limit: number | undefined,
  limitName: string,
): void {
  if (value === undefined || limit === undefined || value <= limit) return;
  throw new UsageError(
    `--${name} must be at most ${limit} (this server's ${limitName}), got ${value}`,
  );
}

/**
 * The maxBatch the server said (`GET /v1/limits`), for checkServerLimit; undefined where it said
 * none. A server without the route is taken by the client to have the default, 100, which it
 * may have raised: above that guess the server's own answer decides. Every answer of the route
 * names maxBodyBytes with maxBatch, and the client leaves maxBodyBytes unbounded only where it
 * got none (ServerLimits).
 */
export function saidMaxBatch(limits: {
  maxBatch: number;
  maxBodyBytes?: number;
}): number | undefined {
  return Number.isFinite(limits.maxBodyBytes) ? limits.maxBatch : undefined;
}

export function stringFlag(values: Values, name: string): string | undefined {
  const raw = values[name];
  return typeof raw === 'string' ? raw : undefined;
}

/** The positional arguments a command needs, by name; too few or too many is a usage error. */
export function positionals(
  given: string[],
  names: string[],
  options: { rest?: boolean } = {},
): string[] {
  if (given.length < names.length) {
    throw new UsageError(
      `missing ${names
        .slice(given.length)
        .map((n) => `<${n}>`)
        .join(' ')}`,
    );
  }
  if (!options.rest && given.length > names.length) {
    throw new UsageError(`unexpected argument ${JSON.stringify(given[names.length])}`);
  }
  return given;
}
