import { build, NotFoundError, type QueueStats } from '../core/index.js';
import type { QueueHandle } from './engine.js';
import { nextTurn } from './next-turn.js';

/**
 * When the steps of a read of many queues run: at one time, or at a clock's reading as each
 * step begins. The latter where the engine is strict and applies a call as it is made (memory,
 * a SQL engine opened with clockMode 'strict'): a time read before the awaits of the read would
 * be behind a call of the queue made meanwhile, a ClockError (R2), where the broker's own calls
 * read the clock as they apply.
 */
export type StepTime = number | (() => number);

/**
 * Steps a read of many queues asks for at once. The event loop turns between two such runs: on
 * SQLite and memory a step runs in this process, and the steps of thousands of queues asked for
 * together ran one batch after another, every request, timer and socket of the process held
 * until the last (5,000 queues with a job come due: 1.2 s on SQLite).
 */
const STEPS_AT_ONCE = 100;

/**
 * The figures at `now` of those of `names` that are queues, each by a step of its own (its
 * `stats` operation), by name in the order given: a queue deleted since it was named, or never
 * one, is left out.
 */
export async function statsByStep(
  handle: (name: string) => QueueHandle,
  now: StepTime,
  names: readonly string[],
): Promise<Map<string, QueueStats>> {
  const stats = new Map<string, QueueStats>();
  for (let start = 0; start < names.length; start += STEPS_AT_ONCE) {
    if (start > 0) await nextTurn();
    const some = names.slice(start, start + STEPS_AT_ONCE);
    const read = await Promise.all(
      some.map((name) =>
        handle(name)
          .run(typeof now === 'number' ? now : now(), build.stats())
          .catch((error: unknown) => {
            if (error instanceof NotFoundError) return undefined;
            throw error;
          }),
      ),
    );
    some.forEach((name, index) => {
      const figures = read[index];
      if (figures !== undefined) stats.set(name, figures);
    });
  }
  return stats;
}

/** What a read of the figures of many queues found (see statsOfMany). */
export interface FiguresRead {
  /** The figures of the queues where time alone changes nothing by `now`, as they stand. */
  readonly stats: ReadonlyMap<string, QueueStats>;
  /** The queues whose figures need a step of their own. */
  readonly due: readonly string[];
  /** The dead-letter queue (R26) of each queue read that has one. */
  readonly deadLetterQueues: ReadonlyMap<string, string>;
}

/**
 * The figures at `now` of those of `names` that are queues, in the order given: as `read`
 * finds them, and by a step each (statsByStep) for those it finds due. A step dead-letters
 * the jobs whose time has come (R3, R13, R30), moving them into the queue's dead-letter queue
 * (R26): that queue's figures, read before the step, would count them nowhere. So the
 * dead-letter queues of the queues that took a step are read again after it (taking a step
 * of their own when something is due there now), and so on down the chain. Chains never loop
 * (R26): a queue is at most every named queue down one.
 */
export async function statsOfMany(
  handle: (name: string) => QueueHandle,
  now: StepTime,
  names: readonly string[],
  read: (names: readonly string[]) => Promise<FiguresRead>,
): Promise<Map<string, QueueStats>> {
  const named = new Set(names);
  const first = await read(names);
  const stats = new Map(first.stats);
  const deadLetterQueues = new Map(first.deadLetterQueues);
  let due = first.due;
  for (let round = 0; due.length > 0 && round <= named.size; round += 1) {
    for (const [name, figures] of await statsByStep(handle, now, due)) stats.set(name, figures);
    const targets = new Set<string>();
    for (const name of due) {
      const target = deadLetterQueues.get(name);
      if (target !== undefined && named.has(target)) targets.add(target);
    }
    if (targets.size === 0) break;
    const again = await read([...targets]);
    for (const [name, figures] of again.stats) stats.set(name, figures);
    for (const [name, target] of again.deadLetterQueues) deadLetterQueues.set(name, target);
    due = again.due;
  }
  const ordered = new Map<string, QueueStats>();
  for (const name of names) {
    const figures = stats.get(name);
    if (figures !== undefined) ordered.set(name, figures);
  }
  return ordered;
}
