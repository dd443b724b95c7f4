import { afterAll, describe, expect, it } from 'vitest';
import { ConflictError } from '../../src/core/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// R26: a chain of dead-letter queues that leads back to its queue is refused when configured,
// also when two handles of one storage (two processes, two machines) configure its two links at
// once: each check must see the other's link, or together they close a loop neither refused.
const factories = engineFactories().filter((factory) => factory.name !== 'memory');
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

describe.each(factories)('dead-letter links configured at once on $name', (factory) => {
  it('R26 two handles linking two queues to each other: one is refused, no loop is stored', async () => {
    const one = await factory.open();
    const two = await factory.open();
    const names: string[] = [];
    try {
      for (let round = 0; round < 10; round++) {
        const a = queueName('chain-a');
        const b = queueName('chain-b');
        names.push(a, b);
        await one.queue(a);
        await one.queue(b);
        const outcomes = await Promise.allSettled([
          one.updateQueue(a, { deadLetterQueue: b }),
          two.updateQueue(b, { deadLetterQueue: a }),
        ]);
        const refused = outcomes.flatMap((outcome) =>
          outcome.status === 'rejected' ? [outcome.reason] : [],
        );
        expect(refused).toHaveLength(1);
        expect(refused[0]).toBeInstanceOf(ConflictError);
        const links = [
          (await (await one.queue(a)).options()).deadLetterQueue,
          (await (await one.queue(b)).options()).deadLetterQueue,
        ];
        expect(links.filter((link) => link !== undefined)).toHaveLength(1);
      }
      const c = queueName('chain-c');
      const d = queueName('chain-d');
      names.push(c, d);
      await one.queue(d);
      // A queue created with a link while the other link is set.
      const created = await Promise.allSettled([
        one.queue(c, { deadLetterQueue: d }),
        two.updateQueue(d, { deadLetterQueue: c }),
      ]);
      expect(created.filter((outcome) => outcome.status === 'rejected')).toHaveLength(1);
    } finally {
      for (const name of names) await one.deleteQueue(name);
      await one.close();
      await two.close();
    }
  });
});

describe.each(factories)(
  'a dead-letter queue deleted while jobs die into it, on $name',
  (factory) => {
    it('R26 each death lands there or stays dead in its own queue; none fails or is left half done', async () => {
      const one = await factory.open();
      const two = await factory.open();
      const names: string[] = [];
      try {
        for (let round = 0; round < 8; round++) {
          const dlq = queueName('gone-dlq');
          const source = queueName('gone-src');
          names.push(dlq, source);
          await one.queue(dlq);
          const here = await one.queue(source, { deadLetterQueue: dlq });
          await here.publishBatch(
            1,
            Array.from({ length: 20 }, (_, i) => ({ id: `j${i}` })),
          );
          const deliveries = await here.reserve(1, { max: 20 });
          const there = await two.queue(source);
          const outcomes = await Promise.allSettled([
            ...deliveries.map((delivery) =>
              there.nack(2, delivery.token, { requeue: false, reason: 'bad' }),
            ),
            (async () => {
              await new Promise((resolve) => setTimeout(resolve, round));
              await one.deleteQueue(dlq);
            })(),
          ]);
          expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
          const view = await here.inspect();
          expect(view.active).toEqual([]);
          expect(await here.stats(3)).toMatchObject({
            active: 0,
            dead: view.dead.length,
            nacks: 20,
            deadLetters: { rejected: 20 },
          });
        }
      } finally {
        for (const name of names) await one.deleteQueue(name);
        await one.close();
        await two.close();
      }
    });
  },
);
