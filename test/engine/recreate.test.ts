import { afterAll, describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// R6, R7: a token is never handed out twice by a queue name, even when the queue was deleted
// and created again; an old token or session id can never name the new queue's deliveries.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

describe.each(factories)('a re-created queue on $name', (factory) => {
  it('R6 continues tokens and session numbers, so old ones stay stale', async () => {
    const engine = await factory.open();
    const name = queueName('recreate');
    const first = await engine.queue(name);
    const session = await first.openSession(1);
    await first.publish(1, { id: 'a' });
    const [old] = await first.reserve(1, { session });
    expect(old?.token).toBe(1);
    expect(await engine.deleteQueue(name)).toBe(true);

    const second = await engine.queue(name);
    await second.publish(2, { id: 'b' });
    const [fresh] = await second.reserve(2);
    expect(fresh?.token).toBe(2);
    expect(await second.ack(2, old?.token ?? 0)).toBe(false);
    await expect(second.heartbeat(2, session)).rejects.toBeInstanceOf(SessionClosedError);
    expect(await second.openSession(2)).not.toBe(session);
    expect((await second.inspect()).active.map((entry) => entry.token)).toEqual([2]);
    await engine.deleteQueue(name);
    await engine.close();
  });
});

describe.each(factories.filter((factory) => factory.name !== 'memory'))(
  'a queue deleted while another handle publishes to it, on $name',
  (factory) => {
    it('leaves no job behind: created again, it is empty, and its stats and inspect agree', async () => {
      const one = await factory.open();
      const two = await factory.open();
      try {
        for (let round = 0; round < 8; round++) {
          const name = queueName('delete-race');
          await one.queue(name);
          const other = await two.queue(name);
          await Promise.allSettled([
            (async () => {
              for (let batch = 0; batch < 5; batch++) {
                const jobs = Array.from({ length: 20 }, (_, i) => ({ id: `j${batch}-${i}` }));
                await other.publishBatch(1, jobs);
              }
            })(),
            (async () => {
              await new Promise((resolve) => setTimeout(resolve, round * 3));
              await one.deleteQueue(name);
            })(),
          ]);
          const again = await one.queue(name);
          expect((await again.inspect()).ready).toEqual([]);
          expect(await again.stats(2)).toMatchObject({ ready: 0, published: 0 });
          await one.deleteQueue(name);
        }
      } finally {
        await one.close();
        await two.close();
      }
    });
  },
);

describe.each(factories)('a queue used, deleted and made again at once on $name', (factory) => {
  it('R6 the new queue has the options asked for, figures that match its jobs, and tokens above the old ones', async () => {
    const engine = await factory.open();
    const name = queueName('at-once');
    try {
      const old = await engine.queue(name, { visibility: 50 });
      await old.publishBatch(1, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      // One tick: the three calls share a transaction on the SQL engines.
      const outcomes = await Promise.allSettled([
        old.reserve(2, { max: 2 }),
        old.publish(2, { id: 'd' }),
        engine.deleteQueue(name),
        engine.queue(name, { visibility: 70 }),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      const handed = (outcomes[0] as PromiseFulfilledResult<{ token: number }[]>).value;
      expect(handed.map((delivery) => delivery.token)).toEqual([1, 2]);
      const fresh = await engine.queue(name);
      expect((await fresh.options()).visibility).toBe(70);
      expect((await fresh.inspect()).ready).toEqual([]);
      expect(await fresh.stats(3)).toMatchObject({ ready: 0, active: 0, published: 0 });
      await fresh.publish(3, { id: 'e' });
      const [next] = await fresh.reserve(3);
      expect(next?.token).toBe(3);
    } finally {
      await engine.deleteQueue(name);
      await engine.close();
    }
  });
});
