/**
 * R17: dead letters are counted by reason **kind**, a fixed set, so that the stored counters,
 * stats and metric series stay bounded whatever reasons callers write. The free-text reason
 * itself is kept on the dead job and in its history (R14).
 *
 * - `max-deliveries`: R13, the queue gave up after maxDeliveries.
 * - `retries-exhausted`, `ambiguous`, `permanent`: the worker's outcomes (docs/worker.md).
 * - `cancelled`: R28, cancelled by id.
 * - `expired`: R30, a ready or delayed job past its retention or expiresAt.
 * - `maxlen`: R31, the oldest ready job, to make room for a publish (overflow dead-letter-oldest).
 * - `rejected`: any other nack or reject with requeue false (the default reason included).
 */
export const DEAD_LETTER_KINDS = [
  'max-deliveries',
  'rejected',
  'retries-exhausted',
  'ambiguous',
  'permanent',
  'cancelled',
  'expired',
  'maxlen',
] as const;

/** One kind of dead letter, under which deaths are counted (see DEAD_LETTER_KINDS). */
export type DeadLetterKind = (typeof DEAD_LETTER_KINDS)[number];

const KINDS: ReadonlySet<string> = new Set(DEAD_LETTER_KINDS);

/** The worker's kinds: a nack or reject says them by its reason. */
const NACK_KINDS: ReadonlySet<string> = new Set(['retries-exhausted', 'ambiguous', 'permanent']);

/**
 * The kind a nack's or reject's death is counted under: one of the worker's, by its exact
 * reason, else `rejected`. A caller's reason never makes a death of the queue's own kinds
 * (`expired`, `max-deliveries` …): those are counted where the queue causes them.
 */
export function nackKind(reason: string): DeadLetterKind {
  return NACK_KINDS.has(reason) ? (reason as DeadLetterKind) : 'rejected';
}

/** A stored count's key as a kind: a kind already, or a free-text reason (`rejected`). */
function kindOfKey(key: string): DeadLetterKind {
  return KINDS.has(key) ? (key as DeadLetterKind) : 'rejected';
}

/**
 * Counts by kind from counts by reason: stored counters written before kinds existed carry
 * free-text keys, folded here into their kind. Returns the same object when already folded.
 */
export function foldDeadLetterCounts(counts: Record<string, number>): Record<string, number> {
  const keys = Object.keys(counts);
  if (keys.every((key) => KINDS.has(key))) return counts;
  const folded: Record<string, number> = {};
  for (const key of keys) {
    const kind = kindOfKey(key);
    folded[kind] = (folded[kind] ?? 0) + (counts[key] ?? 0);
  }
  return folded;
}
