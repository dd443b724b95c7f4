import { describe, expect, it } from 'vitest';
import type { PublishInput, QueueOptions } from '../../src/core/index.js';
import { type Engine, openEngine, type QueueHandle } from '../../src/engine/index.js';
import { postgresEngineForFile } from './postgres-engine-for-file.js';
import { roundTrips } from './round-trips.js';

/**
 * R31 overflow `dead-letter-oldest` with a dead-letter queue (R26): a publish far above the
 * queue's maxLength moves every job beyond it there in that one call. Each moved with a few
 * statements of its own, as a lone death moves: 20,000 took seconds on PostgreSQL, the queue
 * locked. They are looked up and written there many at once, each keeping its origin, in the
 * memory engine's order: groups wait behind their members there, priorities are kept.
 */
const DROPPED = 2000;

/**
 * Jobs of mixed priorities, a few in groups (whose members go on one by one, each a few
 * statements), one of whose ids is already in the dead-letter queue, as is a member of group g0.
 */
function jobs(): PublishInput[] {
  return Array.from({ length: DROPPED }, (_, n) => ({
    id: `j${n}`,
    ...(n % 3 === 0 ? { priority: n % 4 } : {}),
    ...(n % 5 === 0 && n < 40 ? { group: `g${n % 3}` } : {}),
  }));
}

async function fill(engine: Engine, name: string): Promise<QueueHandle> {
  const dlq = await engine.queue(`${name}-dlq`, { visibility: 30_000 });
  await dlq.publishBatch(1, [{ id: 'j10' }, { id: 'other', group: 'g0' }]);
  const options: QueueOptions = { visibility: 30_000, deadLetterQueue: `${name}-dlq` };
  const queue = await engine.queue(name, options);
  const all = jobs();
  for (let start = 0; start < all.length; start += 500) {
    await queue.publishBatch(1, all.slice(start, start + 500));
  }
  await engine.updateQueue(name, { maxLength: 3, overflow: 'dead-letter-oldest' });
  return queue;
}

/** Both queues as they stand: ids in their order, and the origin each moved job keeps. */
async function state(engine: Engine, name: string) {
  const here = await (await engine.queue(name)).inspect();
  const dlq = await engine.queue(`${name}-dlq`);
  const there = await dlq.inspect();
  const origins: Record<string, unknown> = {};
  for (const id of [...there.ready, ...(there.waiting ?? [])]) {
    origins[id] = (await dlq.job(id))?.origin ?? null;
  }
  const stats = await (await engine.queue(name)).stats(2);
  return {
    ready: here.ready,
    dead: here.dead.map((job) => job.id),
    dlqReady: there.ready,
    dlqWaiting: there.waiting ?? [],
    origins,
    deadLetters: stats.deadLetters,
  };
}

async function expected(): Promise<Awaited<ReturnType<typeof state>>> {
  const engine = await openEngine('memory:');
  try {
    const queue = await fill(engine, 'drop');
    await queue.publish(2, { id: 'last', priority: 9 });
    return await state(engine, 'drop');
  } finally {
    await engine.close();
  }
}

describe('R31 a publish that drops thousands of jobs into a dead-letter queue', () => {
  const postgres = postgresEngineForFile('drop-many-dlq');

  it('PostgreSQL: moves them in a few round trips, in the memory engine order, origins kept', async (context) => {
    const { engine } = postgres;
    if (engine === undefined) return context.skip(postgres.skip);
    const name = postgres.name('drop');
    try {
      const queue = await fill(engine, name);
      const sent = await roundTrips(() => queue.publish(2, { id: 'last', priority: 9 }));
      const want = await expected();
      const got = await state(engine, name);
      const at = (origin: unknown) => (origin as { at: number } | null)?.at;
      // The same origins, but for the queue's name.
      expect(Object.keys(got.origins)).toEqual(Object.keys(want.origins));
      for (const [id, origin] of Object.entries(want.origins)) {
        expect(got.origins[id]).toEqual(
          origin === null ? null : { ...(origin as object), queue: name, at: at(origin) },
        );
      }
      expect({ ...got, origins: undefined }).toEqual({ ...want, origins: undefined });
      // Some 6,000 when each moved by statements of its own.
      expect(sent.length).toBeLessThan(100);
    } finally {
      await engine.deleteQueue(name);
      await engine.deleteQueue(`${name}-dlq`);
    }
  });
});
