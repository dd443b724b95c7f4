import { build, NotFoundError, type QueueStats } from '../core/index.js';
import type { QueueHandle } from './engine.js';

/**
 * The figures at `now` of those of `names` that are queues, each by a step of its own (its
 * `stats` operation), by name in the order given: a queue deleted since it was named, or never
 * one, is left out.
 */
export async function statsByStep(
  handle: (name: string) => QueueHandle,
  now: number,
  names: readonly string[],
): Promise<Map<string, QueueStats>> {
  const read = await Promise.all(
    names.map((name) =>
      handle(name)
        .run(now, build.stats())
        .catch((error: unknown) => {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        }),
    ),
  );
  const stats = new Map<string, QueueStats>();
  names.forEach((name, index) => {
    const figures = read[index];
    if (figures !== undefined) stats.set(name, figures);
  });
  return stats;
}
