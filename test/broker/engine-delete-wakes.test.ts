import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { NotFoundError } from '../../src/core/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// A queue deleted through the engine itself (not the broker, which wakes its own receivers)
// still ends the receives parked on it, on every engine: NOT_FOUND, not the end of the wait.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

describe.each(factories)('a queue deleted through the $name engine', (factory) => {
  it('ends the receives parked on it with NOT_FOUND', async () => {
    const engine = await factory.open();
    // The manual clock never moves: only a wake-up ends the wait.
    const clock = new ManualClock(1_000);
    const broker = new EngineBroker(engine, { clock });
    const name = queueName('engine-delete');
    try {
      const queue = await broker.queue(name);
      const receiving = queue.receive({ wait: 20_000 }).catch((error: unknown) => error);
      while (clock.waiting < 1) await new Promise((resolve) => setImmediate(resolve));
      expect(await engine.deleteQueue(name)).toBe(true);
      const bound = new Promise<'not woken'>((resolve) => {
        setTimeout(() => resolve('not woken'), 5_000).unref();
      });
      expect(await Promise.race([receiving, bound])).toBeInstanceOf(NotFoundError);
    } finally {
      await broker.close();
    }
  });
});
