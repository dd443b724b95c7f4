import type { Limits } from '../limits.js';
import { invalidParameter } from './errors.js';

/** The server's limits that bound an SQS parameter in seconds, and the setting that says so. */
const SECOND_LIMITS = {
  visibility: 'maxVisibilityMs',
  delay: 'maxDelayMs',
  wait: 'maxWaitMs',
} as const satisfies Record<string, keyof Limits>;

/**
 * Refuses an SQS parameter of `seconds` above what the server takes (docs/operations.md), as
 * its own routes refuse it: an operator's lower limit holds through every door, and nothing is
 * made shorter than asked without saying so.
 */
export function checkSecondsWithin(
  limits: Limits,
  kind: keyof typeof SECOND_LIMITS,
  name: string,
  seconds: number,
): void {
  const setting = SECOND_LIMITS[kind];
  if (seconds * 1000 <= limits[setting]) return;
  throw invalidParameter(
    name,
    seconds,
    `must be at most ${Math.floor(limits[setting] / 1000)} seconds on this server (its ${setting} is ${limits[setting]}).`,
  );
}

/** The largest message (as SQS counts its size) the server takes: its maxPayloadBytes. */
export function checkMessageWithin(limits: Limits, size: number): void {
  if (size <= limits.maxPayloadBytes) return;
  throw invalidParameter(
    'MessageBody',
    `${size} bytes`,
    `Message must be shorter than ${limits.maxPayloadBytes + 1} bytes on this server (its maxPayloadBytes).`,
  );
}
