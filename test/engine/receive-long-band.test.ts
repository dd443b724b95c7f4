import { afterAll, describe, expect, it } from 'vitest';
import { queueName } from '../conformance/engines.js';
import { sqlEngineFactories } from './transaction-table.js';

/**
 * R23: a receive from a queue with priorities takes the front of each band in turn. The rows of
 * a band were added to the answer as the arguments of one call, and a call takes no more than
 * the stack holds: `receive({ max: 200000 })` of one band failed with `RangeError: Maximum call
 * stack size exceeded` on SQLite and PostgreSQL. No call is made with a band's rows as its
 * arguments now; how many arguments each call was given is watched here, at a size a test runs.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

const COUNT = 20_000;

describe.each(sqlEngines)('a receive of a long band on $name', (factory) => {
  it('R23 takes every job in order, no call given the band as its arguments', async () => {
    const engine = await factory.open();
    const name = queueName('long-band');
    try {
      const queue = await engine.queue(name, { visibility: 60_000 });
      const ids = Array.from({ length: COUNT }, (_, n) => `j${n}`);
      await queue.publishBatch(
        1,
        ids.map((id) => ({ id, priority: 1 })),
      );
      let mostArguments = 0;
      // Replaced by hand, not spied on: a spy records its calls by pushing to an array.
      const { push } = Array.prototype;
      Array.prototype.push = function (this: unknown[], ...items: unknown[]) {
        mostArguments = Math.max(mostArguments, items.length);
        return push.apply(this, items);
      };
      let taken: Awaited<ReturnType<typeof queue.reserve>>;
      try {
        taken = await queue.reserve(2, { max: COUNT });
      } finally {
        Array.prototype.push = push;
      }
      expect(taken.map((delivery) => delivery.id)).toEqual(ids);
      expect(mostArguments).toBeLessThan(COUNT);
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
