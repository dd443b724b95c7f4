import { afterAll, describe, expect, it } from 'vitest';
import { EngineBroker } from '../../src/broker/index.js';
import { ClockError, openEngine, UnsupportedError, ValidationError } from '../../src/index.js';
import { queueName } from '../conformance/engines.js';
import { sqlEngineFactories, transactionTable } from './transaction-table.js';

// The transactional ack: a business write and the ack commit or roll back together.
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

describe.each(sqlEngines)('transactional ack on $name', (factory) => {
  const setup = () =>
    transactionTable(factory, 'tx', {
      visibility: 1000,
      columns: 'id TEXT PRIMARY KEY, amount INTEGER',
    });

  it('commits the business write and the ack together', async () => {
    const { broker, queue, name, table, close } = await setup();
    await queue.publish({ id: 'debit-1', payload: { amount: 5 } });
    const [delivery] = await queue.receive();
    const acked = await broker.transaction(async (tx) => {
      await tx.run(`INSERT INTO ${table} (id, amount) VALUES (?, ?)`, ['debit-1', 5]);
      return tx.ack(name, delivery?.token ?? 0);
    });
    expect(acked).toBe(true);
    expect(await queue.job('debit-1')).toBeUndefined();
    const rows = await broker.transaction((tx) => tx.query(`SELECT id, amount FROM ${table}`));
    expect(rows).toEqual([{ id: 'debit-1', amount: 5 }]);
    await close();
  });

  it('rolls both back when the work throws: the job is still active, nothing written', async () => {
    const { broker, queue, name, table, close } = await setup();
    await queue.publish({ id: 'debit-2' });
    const [delivery] = await queue.receive();
    const failure = broker.transaction(async (tx) => {
      await tx.run(`INSERT INTO ${table} (id, amount) VALUES (?, ?)`, ['debit-2', 7]);
      expect(await tx.ack(name, delivery?.token ?? 0)).toBe(true);
      throw new Error('business rule refused');
    });
    await expect(failure).rejects.toThrow('business rule refused');
    expect((await queue.inspect()).active.map((entry) => entry.id)).toEqual(['debit-2']);
    expect(await broker.transaction((tx) => tx.query(`SELECT id FROM ${table}`))).toEqual([]);
    // The rolled-back ack left the delivery live: a plain ack still completes it.
    expect(await queue.ack(delivery?.token ?? 0)).toBe(true);
    await close();
  });

  it('refuses a transaction used after it ended with ClosedError: nothing runs outside it', async () => {
    const { broker, queue, name, table, close } = await setup();
    await queue.publish({ id: 'job' });
    const [delivery] = await queue.receive();
    // biome-ignore lint/suspicious/noExplicitAny: the transaction kept past its function
    let leaked: any;
    await broker.transaction(async (tx) => {
      leaked = tx;
    });
    const calls: (() => Promise<unknown>)[] = [
      () => leaked.run(`INSERT INTO ${table} (id, amount) VALUES (?, ?)`, ['late', 1]),
      () => leaked.query(`SELECT id FROM ${table}`),
      () => leaked.ack(name, delivery?.token ?? 0),
      () => leaked.publish(name, { id: 'late' }),
      () => leaked.claimOnce('ledger', 'late'),
    ];
    for (const call of calls) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'CLOSED' });
      expect(String((error as Error).message)).toContain('this transaction has ended');
    }
    expect(await broker.transaction((tx) => tx.query(`SELECT id FROM ${table}`))).toEqual([]);
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 1 });
    await close();
  });

  it('a stale token inside the transaction returns false (R8) and the caller decides', async () => {
    const { broker, queue, clock, name, table, close } = await setup();
    await queue.publish({ id: 'debit-3' });
    const [delivery] = await queue.receive();
    clock.advance(1000); // the lease ran out: token is stale
    const outcome = await broker.transaction(async (tx) => {
      const acked = await tx.ack(name, delivery?.token ?? 0);
      if (acked) await tx.run(`INSERT INTO ${table} (id, amount) VALUES (?, ?)`, ['debit-3', 1]);
      return acked;
    });
    expect(outcome).toBe(false);
    expect(await broker.transaction((tx) => tx.query(`SELECT id FROM ${table}`))).toEqual([]);
    expect((await queue.inspect()).ready).toEqual(['debit-3']);
    await close();
  });

  it('the inbox claims a job id once per consumer, in the same transaction', async () => {
    const { broker, close } = await setup();
    const consumer = queueName('inbox');
    expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'job-a'))).toBe(true);
    expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'job-a'))).toBe(false);
    expect(await broker.transaction((tx) => tx.claimOnce(`${consumer}-other`, 'job-a'))).toBe(true);
    // A claim rolled back with its transaction is not remembered.
    await expect(
      broker.transaction(async (tx) => {
        await tx.claimOnce(consumer, 'job-b');
        throw new Error('effect failed');
      }),
    ).rejects.toThrow('effect failed');
    expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'job-b'))).toBe(true);
    await close();
  });

  it('the inbox forgets entries older than the given age, and only those', async () => {
    const { broker, clock, close } = await setup();
    const consumer = queueName('prune');
    await broker.transaction((tx) => tx.claimOnce(consumer, 'old'));
    clock.advance(5_000);
    await broker.transaction((tx) => tx.claimOnce(consumer, 'new'));
    clock.advance(1_000);
    expect(await broker.transaction((tx) => tx.pruneInbox(consumer, 3_000))).toBe(1);
    expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'old'))).toBe(true);
    expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'new'))).toBe(false);
    await expect(broker.transaction((tx) => tx.pruneInbox(consumer, -1))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(broker.transaction((tx) => tx.claimOnce('', 'x'))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await close();
  });

  it('publish and nack inside a transaction commit with it', async () => {
    const { broker, queue, name, close } = await setup();
    await queue.publish({ id: 'first' });
    const [delivery] = await queue.receive();
    await broker.transaction(async (tx) => {
      expect(await tx.nack(name, delivery?.token ?? 0, { requeue: false, reason: 'bad' })).toBe(
        true,
      );
      expect(await tx.publish(name, { id: 'follow-up' })).toEqual({
        id: 'follow-up',
        duplicate: false,
      });
    });
    const view = await queue.inspect();
    expect(view.ready).toEqual(['follow-up']);
    expect(view.dead).toEqual([{ id: 'first', reason: 'bad', deliveryCount: 1 }]);
    await close();
  });

  it('a bad clock inside the transaction is a ClockError and rolls back', async () => {
    const engine = await factory.open();
    const name = queueName('txclock');
    await engine.queue(name);
    const transaction = engine.transaction;
    expect(transaction).toBeDefined();
    await expect(
      engine.transaction?.(async (tx) => {
        await tx.publish(name, 10, { id: 'x' });
        await tx.publish(name, 5, { id: 'y' });
      }),
    ).rejects.toBeInstanceOf(ClockError);
    const queue = await engine.queue(name);
    expect(await queue.inspect()).toEqual({
      queueTime: 0,
      ready: [],
      delayed: [],
      active: [],
      dead: [],
    });
    await engine.deleteQueue(name);
    await engine.close();
  });

  it('R18 a publish or inbox claim inside a transaction refuses ids no engine can store', async () => {
    const { broker, name, queue, close } = await setup();
    for (const id of ['a\u0000b', '\ud800', '']) {
      await expect(broker.transaction((tx) => tx.publish(name, { id }))).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(broker.transaction((tx) => tx.claimOnce('c', id))).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
    await expect(
      broker.transaction((tx) => tx.publish(name, { id: 'd', delay: -1 })),
    ).rejects.toBeInstanceOf(ValidationError);
    expect((await queue.inspect()).ready).toEqual([]);
    await close();
  });
});

describe('transactions where the storage has none', () => {
  it('the memory engine answers UnsupportedError', async () => {
    const broker = new EngineBroker(await openEngine('memory:'));
    await expect(broker.transaction(async () => 1)).rejects.toBeInstanceOf(UnsupportedError);
    await broker.close();
  });
});
