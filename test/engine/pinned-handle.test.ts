import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker } from '../../src/broker/index.js';
import { NotFoundError } from '../../src/core/index.js';
import type { Engine } from '../../src/engine/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// A pinned handle names one queue, not its name: once that queue is deleted (here or by
// another process sharing the storage) its calls answer NOT_FOUND, and a queue made again
// under the name is never reached through it.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

describe.each(factories)('a pinned handle on $name', (factory) => {
  /** The engine, and another on the same storage (memory: the same one, it is one process). */
  async function two(): Promise<[Engine, Engine]> {
    const one = await factory.open();
    return [one, factory.name === 'memory' ? one : await factory.open()];
  }

  async function close(engines: readonly Engine[]): Promise<void> {
    for (const engine of new Set(engines)) await engine.close();
  }

  it('acts on the queue its first call found, and on none once it is deleted and made again', async () => {
    const [one, other] = await two();
    const name = queueName('pinned');
    const target = queueName('pinned-to');
    try {
      const queue = await one.queue(name);
      await one.queue(target);
      await queue.publishBatch(1, [{ id: 'a' }, { id: 'b' }]);
      const pinned = one.pinnedHandle?.(name);
      if (pinned === undefined) throw new Error('no pinnedHandle');
      expect((await pinned.stats(1)).ready).toBe(2);
      const [held] = await pinned.reserve(1);
      expect(held?.id).toBe('a');
      expect(await pinned.extend(1, held?.token ?? 0, 1000)).not.toBeNull();

      expect(await other.deleteQueue(name)).toBe(true);
      const again = await other.queue(name);
      await again.publishBatch(2, [{ id: 'a' }, { id: 'c' }]);
      const calls: (() => Promise<unknown>)[] = [
        () => pinned.stats(3),
        () => pinned.reserve(3),
        () => pinned.ack(3, held?.token ?? 0),
        () => pinned.publish(3, { id: 'd' }),
        () => pinned.moveJobs(3, { to: target }),
        () => pinned.purgeQueue(3),
        () => pinned.cancel(3, 'a'),
        () => pinned.inspect(),
        () => pinned.job('a'),
      ];
      for (const call of calls) await expect(call()).rejects.toBeInstanceOf(NotFoundError);
      // The queue made again is as it was made: only a handle by name reaches it.
      const byName = one.handle(name);
      expect((await byName.inspect()).ready).toEqual(['a', 'c']);
      expect((await one.handle(target).inspect()).ready).toEqual([]);
      expect((await byName.stats(3)).deliveries).toBe(0);
    } finally {
      await one.deleteQueue(name);
      await one.deleteQueue(target);
      await close([one, other]);
    }
  });

  it('a receive that waits through one ends NOT_FOUND when its queue is deleted and made again, taking nothing of the new one', async () => {
    const [one, other] = await two();
    const broker = new EngineBroker(one);
    const otherBroker = other === one ? broker : new EngineBroker(other);
    const name = queueName('pinned-wait');
    try {
      await broker.queue(name);
      const pinned = broker.pinnedHandle(name);
      await pinned.publish({ id: 'first' });
      const [first] = await pinned.receive();
      expect(first?.id).toBe('first');
      expect(await pinned.ack(first?.token ?? 0)).toBe(true);
      // Its end is taken as it comes: it may come before the queue is made again.
      const waiting = pinned.receive({ wait: 20_000 }).then(
        (deliveries) => deliveries,
        (error: unknown) => error,
      );
      // Once it waits: a look of its own finds nothing ready.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await otherBroker.deleteQueue(name)).toBe(true);
      const again = await otherBroker.queue(name);
      await again.publish({ id: 'new' });
      expect(await waiting).toBeInstanceOf(NotFoundError);
      expect((await broker.handle(name).inspect()).ready).toEqual(['new']);
    } finally {
      await broker.deleteQueue(name);
      await broker.close();
      if (otherBroker !== broker) await otherBroker.close();
    }
  });
});

describe.each(factories)('a waiting receive through a pinned handle on $name', (factory) => {
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('is served in its turn, before a receive by name that began to wait after it', async () => {
    const broker = new EngineBroker(await factory.open());
    const name = queueName('pinned-turn');
    try {
      await broker.queue(name);
      const pinned = broker.pinnedHandle(name);
      // Pinned by a first call, as a move task's look at the queue.
      await pinned.stats();
      const first = pinned.receive({ wait: 5_000 });
      await pause(200);
      const controller = new AbortController();
      const second = broker.handle(name).receive({ wait: 5_000, signal: controller.signal });
      await pause(200);
      await broker.handle(name).publish({ id: 'one' });
      expect((await first).map((delivery) => delivery.id)).toEqual(['one']);
      controller.abort();
      expect(await second).toEqual([]);
    } finally {
      await broker.deleteQueue(name);
      await broker.close();
    }
  });

  it('is never handed a job of a queue made again under the name by the same process', async () => {
    const broker = new EngineBroker(await factory.open());
    const name = queueName('pinned-again');
    try {
      await broker.queue(name);
      const pinned = broker.pinnedHandle(name);
      await pinned.stats();
      const waiting = pinned.receive({ wait: 5_000 }).then(
        (deliveries) => deliveries,
        (error: unknown) => error,
      );
      await pause(200);
      expect(await broker.deleteQueue(name)).toBe(true);
      await (await broker.queue(name)).publish({ id: 'new' });
      expect(await waiting).toBeInstanceOf(NotFoundError);
      expect((await broker.handle(name).inspect()).ready).toEqual(['new']);
    } finally {
      await broker.deleteQueue(name);
      await broker.close();
    }
  });
});
