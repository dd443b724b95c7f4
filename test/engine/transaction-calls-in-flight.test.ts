import { afterAll, describe, expect, it } from 'vitest';
import { sqlEngineFactories, transactionTable } from './transaction-table.js';

/**
 * Calls on `tx` that overlap (awaited together, or one still running when the work returns or
 * throws) share the transaction's one connection: they run one after another, and none runs
 * after the transaction ended, where its statements would commit outside it.
 */
const sqlEngines = sqlEngineFactories();
afterAll(async () => {
  await Promise.all(sqlEngines.map((factory) => factory.cleanup()));
});

describe.each(sqlEngines)('calls on a transaction that overlap on $name', (factory) => {
  const setup = () => transactionTable(factory, 'txcalls', { visibility: 60_000 });

  it('acks awaited together with Promise.all are each counted in the stats', async () => {
    const { broker, queue, name, close } = await setup();
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    const deliveries = await queue.receive({ max: 3 });
    const acked = await broker.transaction((tx) =>
      Promise.all(deliveries.map((delivery) => tx.ack(name, delivery.token))),
    );
    expect(acked).toEqual([true, true, true]);
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 0, acks: 3 });
    await close();
  });

  it('publishes without ids awaited together get ids of their own', async () => {
    const { broker, queue, name, close } = await setup();
    const published = await broker.transaction((tx) =>
      Promise.all([tx.publish(name, {}), tx.publish(name, {}), tx.publish(name, {})]),
    );
    expect(new Set(published.map((result) => result.id)).size).toBe(3);
    expect(await queue.stats()).toMatchObject({ ready: 3, published: 3 });
    await close();
  });

  it('an ack still running when the work throws rolls back with it: the delivery stays live', async () => {
    const { broker, queue, name, close } = await setup();
    await queue.publish({ id: 'kept' });
    const [delivery] = await queue.receive();
    const token = delivery?.token ?? 0;
    let running: Promise<boolean> | undefined;
    await expect(
      broker.transaction(async (tx) => {
        running = tx.ack(name, token);
        running.catch(() => undefined);
        throw new Error('business rule refused');
      }),
    ).rejects.toThrow('business rule refused');
    await expect(running).rejects.toMatchObject({ code: 'CLOSED' });
    expect((await queue.job('kept'))?.state).toBe('active');
    expect(await queue.stats()).toMatchObject({ active: 1, acks: 0 });
    expect(await queue.ack(token)).toBe(true);
    expect(await queue.stats()).toMatchObject({ active: 0, acks: 1 });
    await close();
  });

  it('a call not awaited when the work returns fails the transaction and nothing of it commits', async () => {
    const { broker, queue, name, table, close } = await setup();
    await queue.publish({ id: 'kept' });
    const [delivery] = await queue.receive();
    const token = delivery?.token ?? 0;
    let running: Promise<boolean> | undefined;
    const error = await broker
      .transaction(async (tx) => {
        await tx.run(`INSERT INTO ${table} (id) VALUES (?)`, ['written']);
        running = tx.ack(name, token);
        running.catch(() => undefined);
      })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'CLOSED' });
    await expect(running).rejects.toMatchObject({ code: 'CLOSED' });
    expect(await broker.transaction((tx) => tx.query(`SELECT id FROM ${table}`))).toEqual([]);
    expect((await queue.job('kept'))?.state).toBe('active');
    expect(await queue.stats()).toMatchObject({ active: 1, acks: 0 });
    expect(await queue.ack(token)).toBe(true);
    await close();
  });
});
