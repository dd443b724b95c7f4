/** R15: exponential backoff with a cap and a jitter that replays identically. */
export interface BackoffInput {
  /** The job id: with the attempt, it seeds the jitter. */
  id: string;
  /** 1 for the first retry. Positive integer. */
  attempt: number;
  /** Delay of the first retry before jitter. Integer ≥ 0. */
  baseDelay: number;
  /** Upper bound of any delay. Integer ≥ baseDelay. */
  maxDelay: number;
  /** Growth per attempt. Default 2. */
  factor?: number;
  /** Share of the delay that is randomised, 0..1. Default 0.5 ("equal jitter"). */
  jitter?: number;
}

/**
 * The delay before retry `attempt`: min(maxDelay, baseDelay · factor^(attempt−1)), of which the
 * `jitter` share is scaled by a deterministic fraction of (id, attempt). Always an integer in
 * [0, maxDelay], however large `attempt`.
 */
export function backoffDelay(input: BackoffInput): number {
  const { id, attempt, baseDelay, maxDelay, factor = 2, jitter = 0.5 } = input;
  // factor^(attempt−1) overflows to Infinity after enough attempts (2^1024): a zero base must
  // stay 0, not 0 · Infinity = NaN; a positive one is capped by maxDelay.
  const exponential = baseDelay === 0 ? 0 : Math.min(maxDelay, baseDelay * factor ** (attempt - 1));
  const fraction = unitHash(`${id}\u0000${attempt}`);
  const delay = Math.floor(exponential * (1 - jitter) + exponential * jitter * fraction);
  // Near 2^53 the sum may round up past the cap.
  return Math.min(delay, maxDelay);
}

/** FNV-1a (32 bit) of the string, mapped to [0, 1). */
export function unitHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  // A final avalanche so that neighbouring attempts spread over the whole range.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  return (hash >>> 0) / 0x1_0000_0000;
}
