import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import type { Delivery } from '../../src/core/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// R24: a group whose first member leaves goes on, its next member ready at once. A receive
// parked on the queue hears of it on every engine, whatever made the group go on, rather than
// sleeping to the end of its wait with a job ready. (The manual clock never moves: only a
// wake-up ends a wait.)
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** The ids received, or `not woken` when the receive still waits after a while. */
async function received(receiving: Promise<Delivery[]>): Promise<string[] | 'not woken'> {
  const bound = new Promise<'not woken'>((resolve) => {
    setTimeout(() => resolve('not woken'), 5_000).unref();
  });
  const answer = await Promise.race([receiving, bound]);
  return answer === 'not woken' ? answer : answer.map((delivery) => delivery.id);
}

async function parked(clock: ManualClock, count: number): Promise<void> {
  while (clock.waiting < count) await new Promise((resolve) => setImmediate(resolve));
}

describe.each(factories)('a group going on, on the $name engine', (factory) => {
  it('wakes a receive parked on the queue when moveJobs moves its first member', async () => {
    const clock = new ManualClock(1_000);
    const broker = new EngineBroker(await factory.open(), { clock });
    const name = queueName('group-moved');
    const target = queueName('group-moved-to');
    try {
      const queue = await broker.queue(name);
      await broker.queue(target);
      // The first member is delayed far ahead; the next one waits behind it.
      await queue.publish({ id: 'first', group: 'g', delay: 60_000 });
      await queue.publish({ id: 'next', group: 'g' });
      const receiving = queue.receive({ wait: 20_000 });
      await parked(clock, 1);
      expect(await queue.moveJobs({ ids: ['first'], to: target })).toBe(1);
      expect(await received(receiving)).toEqual(['next']);
    } finally {
      await broker.deleteQueue(name);
      await broker.deleteQueue(target);
      await broker.close();
    }
  });

  it('wakes a second at-most-once receive when the first takes the group first member', async () => {
    const clock = new ManualClock(1_000);
    const broker = new EngineBroker(await factory.open(), { clock });
    const name = queueName('group-auto');
    try {
      const queue = await broker.queue(name);
      const first = queue.receive({ wait: 20_000, max: 2, ack: 'auto' });
      await parked(clock, 1);
      const second = queue.receive({ wait: 20_000, max: 2, ack: 'auto' });
      await parked(clock, 2);
      await queue.publishBatch([
        { id: 'a', group: 'g' },
        { id: 'b', group: 'g' },
      ]);
      // One receive takes a, which lets b go on only after that call (R24): the other takes it.
      const answers = [await received(first), await received(second)];
      expect(answers.flat().sort()).toEqual(['a', 'b']);
    } finally {
      await broker.deleteQueue(name);
      await broker.close();
    }
  });
});

// The same with the publish made through another handle of the storage (another process), so
// that no transaction of the receives' own process makes the jobs ready.
describe.each(factories.filter((factory) => factory.name !== 'memory'))(
  'a group going on, on the $name engine shared with another handle',
  (factory) => {
    it('wakes a second at-most-once receive when the first takes the group first member', async () => {
      const clock = new ManualClock(1_000);
      const broker = new EngineBroker(await factory.open(), { clock });
      const elsewhere = await factory.open();
      const name = queueName('group-auto-shared');
      try {
        const queue = await broker.queue(name);
        const first = queue.receive({ wait: 20_000, max: 2, ack: 'auto' });
        await parked(clock, 1);
        const second = queue.receive({ wait: 20_000, max: 2, ack: 'auto' });
        await parked(clock, 2);
        await (await elsewhere.queue(name)).publishBatch(clock.now(), [
          { id: 'a', group: 'g' },
          { id: 'b', group: 'g' },
        ]);
        const answers = [await received(first), await received(second)];
        expect(answers.flat().sort()).toEqual(['a', 'b']);
      } finally {
        await elsewhere.close();
        await broker.deleteQueue(name);
        await broker.close();
      }
    });
  },
);
