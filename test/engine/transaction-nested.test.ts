import { afterAll, describe, expect, it } from 'vitest';
import { UnsupportedError } from '../../src/index.js';
import { TransactionalInbox } from '../../src/worker/index.js';
import { queueName } from '../conformance/engines.js';
import { sqlEngineFactories, transactionTable } from './transaction-table.js';

/**
 * An engine runs one transaction at a time: one begun inside the function of another (a helper
 * that opens its own, an inbox inside a transaction) would wait for the outer one, which waits
 * for it. It is refused at once, and the outer transaction goes on.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

describe.each(sqlEngines)('a transaction inside another on $name', (factory) => {
  const setup = () => transactionTable(factory, 'txnested', { visibility: 60_000 });

  it('is refused with UnsupportedError, and the outer transaction commits', async () => {
    const { broker, queue, name, table, rows, close } = await setup();
    await queue.publish({ id: 'job' });
    const [delivery] = await queue.receive();
    const inner = await broker.transaction(async (tx) => {
      const refused = await broker
        .transaction((other) => other.run(`INSERT INTO ${table} (id) VALUES (?)`, ['inner']))
        .catch((error: unknown) => error);
      await tx.run(`INSERT INTO ${table} (id) VALUES (?)`, ['outer']);
      expect(await tx.ack(name, delivery?.token ?? 0)).toBe(true);
      return refused;
    });
    expect(inner).toBeInstanceOf(UnsupportedError);
    expect(String((inner as Error).message)).toContain('tx');
    expect(await rows()).toEqual([{ id: 'outer' }]);
    expect(await queue.stats()).toMatchObject({ active: 0, acks: 1 });
    await close();
  });

  it('an inbox used inside a transaction is refused the same way', async () => {
    const { broker, close } = await setup();
    const inbox = new TransactionalInbox(broker);
    const consumer = queueName('nested-inbox');
    const refused = await broker
      .transaction(() => inbox.processOnce(consumer, 'job', () => 1))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnsupportedError);
    expect(await inbox.processOnce(consumer, 'job', () => 1)).toEqual({
      processed: true,
      value: 1,
    });
    await close();
  });

  it('a transaction begun after the outer one ended, from a timer it set, runs', async () => {
    const { broker, table, rows, close } = await setup();
    let later: Promise<number> | undefined;
    let started!: () => void;
    const begun = new Promise<void>((resolve) => {
      started = resolve;
    });
    await broker.transaction(async (tx) => {
      await tx.run(`INSERT INTO ${table} (id) VALUES (?)`, ['first']);
      setImmediate(() => {
        later = broker.transaction((other) =>
          other.run(`INSERT INTO ${table} (id) VALUES (?)`, ['second']),
        );
        started();
      });
    });
    await begun;
    expect(await later).toBe(1);
    expect(await rows()).toEqual([{ id: 'first' }, { id: 'second' }]);
    await close();
  });
});
