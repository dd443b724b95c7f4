import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker } from '../../src/broker/index.js';
import { ManualClock } from '../../src/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

/**
 * A transaction's work may throw anything: an error whose `code` is a number (an HTTP client's),
 * null, a value with no text. The transaction rolls back and fails with what was thrown, and
 * the storage goes on taking calls.
 */
const sqlEngines = engineFactories().filter((factory) => factory.name !== 'memory');
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

const throws: [string, () => unknown][] = [
  ['an error with a number code', () => Object.assign(new Error('not found'), { code: 404 })],
  ['an error with a null code', () => Object.assign(new Error('no code'), { code: null })],
  ['null', () => null],
  ['undefined', () => undefined],
  ['an object that cannot be shown', () => Object.create(null)],
];

describe.each(sqlEngines)('a transaction that throws an odd value on $name', (factory) => {
  it.each(throws)('rolls back on %s, fails with it, and the queue goes on', async (_, thrown) => {
    const engine = await factory.open();
    const broker = new EngineBroker(engine, { clock: new ManualClock(1_000) });
    try {
      const name = queueName('odd');
      const queue = await broker.queue(name, { visibility: 1000 });
      await queue.publish({ id: 'kept' });
      const [delivery] = await queue.receive();
      const value = thrown();
      const outcome = await broker
        .transaction(async (tx) => {
          expect(await tx.ack(name, delivery?.token ?? 0)).toBe(true);
          throw value;
        })
        .then(
          () => ({ failed: false, reason: undefined as unknown }),
          (reason: unknown) => ({ failed: true, reason }),
        );
      expect(outcome.failed).toBe(true);
      expect(outcome.reason).toBe(value);
      // The ack rolled back with the transaction, and the queue takes calls.
      expect((await queue.job('kept'))?.state).toBe('active');
      await queue.publish({ id: 'after' });
      expect(await queue.ack(delivery?.token ?? 0)).toBe(true);
      expect((await queue.stats()).ready).toBe(1);
      await broker.deleteQueue(name);
    } finally {
      await broker.close();
    }
  });
});
