import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { QueueFullError } from '../../src/core/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';
import { inOwnPostgresDatabase } from '../engine/postgres-scratch.js';

// R31, R17: an occurrence a schedule could not publish, its queue full, counts its job in the
// queue's `refused` as any refused publish does, on every engine (docs/operations.md). On
// PostgreSQL in a database of the file's own: a pass lists every schedule of the storage, and
// in the shared one other files' schedules would meet this failing one.
const factories = engineFactories().map((factory) =>
  inOwnPostgresDatabase(factory, 'sched_refused'),
);
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

const T0 = Date.UTC(2026, 11, 5, 12);

describe.each(factories)('R31 a schedule refused by a full queue, on $name', (factory) => {
  it('R31 each pass that is refused counts the occurrence in refused, and nothing is published', async () => {
    const clock = new ManualClock(T0);
    const broker = new EngineBroker(await factory.open(), { clock });
    const name = queueName('sched-refused');
    try {
      const queue = await broker.queue(name, { maxLength: 1 });
      await queue.publish({ id: 'filler' });
      await queue.schedule('tick', 1000);
      const scheduler = broker.scheduler();
      for (const pass of [1, 2]) {
        clock.set(T0 + pass * 1000);
        const failed = await scheduler.runOnce().catch((error: unknown) => error);
        expect((failed as AggregateError).errors).toEqual([expect.any(QueueFullError)]);
        expect(await queue.stats()).toMatchObject({ ready: 1, published: 1, refused: pass });
      }
      // Not recorded either: once there is room, the pass publishes the occurrence.
      const [filler] = await queue.receive();
      await queue.ack(filler?.token ?? 0);
      expect(await scheduler.runOnce()).toHaveLength(1);
      expect(await queue.stats()).toMatchObject({ published: 2, refused: 2 });
    } finally {
      await broker.deleteQueue(name);
      await broker.close();
    }
  });
});
