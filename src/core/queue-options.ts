import { ConflictError, DeadLetterLoopError, show, ValidationError } from './errors.js';
import type { QueueOptions, ResolvedQueueOptions } from './types.js';

/** Queue names: what URLs, metrics labels and file names can all carry. */
export const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;

/** Refuses a name that is not a queue name (QUEUE_NAME) with a ValidationError. */
export function checkQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    throw new ValidationError(
      `queue name must be 1 to 80 characters of letters, digits, '_', '-' or '.', starting with a letter or digit; got ${show(name)}`,
    );
  }
}

/** R31: what a publish beyond `maxLength` does; the first is the default. */
export const OVERFLOW_MODES = ['reject', 'dead-letter-oldest'] as const;

/**
 * Whether `value`, asked for option `name`, means what leaving the option out means: no
 * dead-letter queue (`null`), running (`false`), no retention or length bound (`null`,
 * Infinity), overflow `reject` (or `null`). Such options are not stored (see ResolvedQueueOptions).
 */
export function meansAbsent(name: string, value: unknown): boolean {
  switch (name) {
    case 'deadLetterQueue':
      return value === null;
    case 'paused':
      return value === false;
    case 'retention':
    case 'maxLength':
      return value === null || value === Number.POSITIVE_INFINITY;
    case 'overflow':
      return value === 'reject' || value === null;
    default:
      return false;
  }
}

/** Refuses to open an existing queue with options that differ from the stored ones. */
export function checkSameOptions(
  name: string,
  stored: ResolvedQueueOptions,
  requested: QueueOptions | undefined,
): void {
  const asked = Object.entries(requested ?? {}).filter(
    ([key, value]) =>
      value !== undefined &&
      // `deadLetterQueue: null`, `paused: false`, `retention: Infinity` … ask for what an
      // absent option means.
      !(meansAbsent(key, value) && stored[key as keyof ResolvedQueueOptions] === undefined) &&
      stored[key as keyof ResolvedQueueOptions] !== value,
  );
  if (asked.length === 0) return;
  const differing = asked.map(
    ([key, value]) =>
      `${key}: stored ${stored[key as keyof ResolvedQueueOptions] ?? 'unset'}, asked ${value}`,
  );
  // The CLI pauses and resumes by commands of their own: `queue update` has no flag for it.
  const paused = asked.find(([key]) => key === 'paused');
  const pause =
    paused === undefined ? '' : `leaseq queue ${paused[1] ? 'pause' : 'resume'} ${name}`;
  const cli =
    asked.length === 1 && paused !== undefined
      ? pause
      : `leaseq queue update${pause === '' ? '' : `, ${pause}`}`;
  throw new ConflictError(
    `queue ${name} exists with other options (${differing.join('; ')}); update the queue to change them (updateQueue, PATCH /v1/queues/${name}, ${cli})`,
  );
}

/**
 * R26: refuses a dead-letter queue that would lead back to `name` (itself, or through the
 * dead-letter queues of the queues it names). `deadLetterQueueOf` reads the stored option.
 */
export async function checkDeadLetterChain(
  name: string,
  deadLetterQueue: string | undefined,
  deadLetterQueueOf: (queue: string) => Promise<string | undefined> | string | undefined,
): Promise<void> {
  const path = [name];
  let next = deadLetterQueue;
  while (next !== undefined && !chainEnds(name, path, next)) next = await deadLetterQueueOf(next);
}

/**
 * `checkDeadLetterChain` where the stored options are at hand (in memory): it reads them in one
 * synchronous step, so that no other change of options runs between the check and the change
 * it guards (two changes checked at once would each miss the other's link).
 */
export function checkDeadLetterChainNow(
  name: string,
  deadLetterQueue: string | undefined,
  deadLetterQueueOf: (queue: string) => string | undefined,
): void {
  const path = [name];
  let next = deadLetterQueue;
  while (next !== undefined && !chainEnds(name, path, next)) next = deadLetterQueueOf(next);
}

/** Adds `next` to the chain: throws when it leads back to `name`; true when the chain ends. */
function chainEnds(name: string, path: string[], next: string): boolean {
  path.push(next);
  if (next === name) {
    throw new DeadLetterLoopError(path);
  }
  // A chain that already loops without `name` was refused when it was configured.
  return path.indexOf(next) !== path.length - 1;
}
