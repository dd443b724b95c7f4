import { describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import type { Engine, EngineTransaction } from '../../src/engine/engine.js';
import { openEngine } from '../../src/engine/index.js';
import { sqliteAndScratchPostgres } from './postgres-scratch.js';

// R25 on the SQL engines: a scheduler pass records and publishes all its due occurrences in one
// transaction, not one each. Three servers over one PostgreSQL with 100 schedules of every
// second spent longer than a second on each pass, and occurrences were passed over. Each engine
// gets storage of its own: a pass lists every schedule of its storage.

const T0 = Date.UTC(2026, 11, 8, 12);

const { targets, postgresSkip } = sqliteAndScratchPostgres('pass_tx');

/** Makes every transaction of `engine` see a publish into `queue` fail as the storage might. */
function failPublishesInto(engine: Engine, queue: string): void {
  const transaction = engine.transaction?.bind(engine);
  if (transaction === undefined) throw new Error('a SQL engine has transactions');
  engine.transaction = <T>(work: (tx: EngineTransaction) => Promise<T>) =>
    transaction((tx) => {
      const publish: EngineTransaction['publish'] = (name, now, input) =>
        name === queue
          ? Promise.reject(new Error('the storage failed this statement'))
          : tx.publish(name, now, input);
      return work(
        new Proxy(tx, {
          get: (target, key, receiver) =>
            key === 'publish' ? publish : Reflect.get(target, key, receiver),
        }),
      );
    });
}

describe.each(targets)('R25 a scheduler pass on $name', (target) => {
  async function withBroker(
    use: (on: { clock: ManualClock; engine: Engine; broker: EngineBroker }) => Promise<void>,
    context: { skip: (reason: string) => void },
  ): Promise<void> {
    const skip = target.name === 'postgres' ? postgresSkip() : undefined;
    if (skip !== undefined) return context.skip(skip);
    const clock = new ManualClock(T0);
    const engine = await openEngine(target.url());
    const broker = new EngineBroker(engine, { clock });
    try {
      await use({ clock, engine, broker });
    } finally {
      for (const { name } of await broker.listQueues()) await broker.deleteQueue(name);
      await broker.close();
    }
  }

  it('R25 records and publishes all its due occurrences in one transaction', async (context) => {
    await withBroker(async ({ clock, engine, broker }) => {
      const first = await broker.queue('first');
      const second = await broker.queue('second');
      for (let n = 0; n < 10; n++) {
        await first.schedule(`s${n}`, 1000);
        await second.schedule(`s${n}`, 1000);
      }
      clock.advance(1000);
      const transaction = vi.spyOn(engine, 'transaction');
      const published = await broker.scheduler().runOnce();
      expect(published).toHaveLength(20);
      expect(transaction).toHaveBeenCalledTimes(1);
      expect((await first.stats()).ready).toBe(10);
      expect((await second.stats()).ready).toBe(10);
      expect(await broker.scheduler().runOnce()).toEqual([]);
    }, context);
  });

  it('R25 a pass of more due occurrences than one transaction takes publishes them in transactions of 100', async (context) => {
    await withBroker(async ({ clock, engine, broker }) => {
      const queue = await broker.queue('many');
      for (let n = 0; n < 250; n++) await queue.schedule(`s${n}`, 1000);
      clock.advance(1000);
      const transaction = vi.spyOn(engine, 'transaction');
      expect(await broker.scheduler().runOnce()).toHaveLength(250);
      expect(transaction).toHaveBeenCalledTimes(3);
      expect((await queue.stats()).ready).toBe(250);
    }, context);
  });

  it('R25 a failure that is not a refusal rolls the pass back, then each is tried alone and only the faulty one fails', async (context) => {
    await withBroker(async ({ clock, engine, broker }) => {
      const good = await broker.queue('good');
      const bad = await broker.queue('bad');
      const other = await broker.queue('other');
      for (const queue of [good, bad, other]) await queue.schedule('tick', 1000);
      clock.advance(1000);
      failPublishesInto(engine, 'bad');
      const failed = await broker
        .scheduler()
        .runOnce()
        .catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(AggregateError);
      expect((failed as AggregateError).message).toContain('bad/tick');
      expect((failed as AggregateError).errors).toHaveLength(1);
      expect((await good.inspect()).ready).toEqual(['tick@2026-12-08T12:00:01.000Z']);
      expect((await other.inspect()).ready).toEqual(['tick@2026-12-08T12:00:01.000Z']);
      // Not recorded: due for the next pass.
      expect((await bad.schedules())[0]?.lastAt).toBeUndefined();
      expect((await good.schedules())[0]?.lastAt).toBe(T0 + 1000);
    }, context);
  });
});
