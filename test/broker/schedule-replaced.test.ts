import { afterAll, describe, expect, it } from 'vitest';
import {
  EngineBroker,
  ManualClock,
  type PublishedOccurrence,
  type Queue,
} from '../../src/broker/index.js';
import type { Engine } from '../../src/engine/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';
import { inOwnPostgresDatabase } from '../engine/postgres-scratch.js';

// A pass reads the schedules, then records and publishes each due occurrence. A schedule
// replaced in between (by another process, or a call of this one) must not have an occurrence
// of its old definition published: the compare and set names the definition it read.
const factories = engineFactories().map((factory) =>
  inOwnPostgresDatabase(factory, 'sched_replaced'),
);
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

const T0 = Date.UTC(2026, 11, 5, 12);

/** What a pass published into `queue`: the storage has the schedules of this file's other tests. */
async function ofQueue(
  queue: string,
  pass: Promise<PublishedOccurrence[]>,
): Promise<PublishedOccurrence[]> {
  return (await pass).filter((occurrence) => occurrence.queue === queue);
}

/** Replaces `queue`/`name` the first time the schedules are listed, after they were read. */
function replaceAfterFirstList(engine: Engine, replace: () => Promise<void>): void {
  const list = engine.listSchedules.bind(engine);
  let replaced = false;
  engine.listSchedules = async (queue) => {
    const read = await list(queue);
    if (!replaced) {
      replaced = true;
      await replace();
    }
    return read;
  };
}

describe.each(factories)('R25 a schedule replaced during a pass, on $name', (factory) => {
  /** A broker over this engine on a manual clock at T0, and a queue of its own, deleted after. */
  async function withQueue(
    label: string,
    use: (on: {
      clock: ManualClock;
      engine: Engine;
      broker: EngineBroker;
      name: string;
      queue: Queue;
    }) => Promise<void>,
  ): Promise<void> {
    const clock = new ManualClock(T0);
    const engine = await factory.open();
    const broker = new EngineBroker(engine, { clock });
    const name = queueName(label);
    try {
      await use({ clock, engine, broker, name, queue: await broker.queue(name) });
    } finally {
      await broker.deleteQueue(name).catch(() => {});
      await broker.close();
    }
  }

  it('R25 the pass publishes nothing of the old definition, and the next pass the new one', async () => {
    await withQueue('replaced', async ({ clock, engine, broker, name, queue }) => {
      await queue.schedule('pulse', 1_000, { payload: { version: 1 } });
      clock.advance(1_000);
      replaceAfterFirstList(engine, async () => {
        await queue.schedule('pulse', 1_000, { payload: { version: 2 } });
      });
      const scheduler = broker.scheduler();
      expect(await ofQueue(name, scheduler.runOnce())).toEqual([]);
      expect((await queue.stats()).ready).toBe(0);
      // Set again at T0 + 1000: its first occurrence is a period later, with the new payload.
      clock.advance(1_000);
      expect(await ofQueue(name, scheduler.runOnce())).toMatchObject([
        { name: 'pulse', at: T0 + 2_000 },
      ]);
      const [job] = await queue.receive({ max: 10 });
      expect(job?.payload).toEqual({ version: 2 });
      expect(await queue.receive({ max: 10 })).toEqual([]);
    });
  });

  it.skipIf(factory.name === 'memory')(
    'R25 a definition stored as other text (keys in another order, spaces) still fires, once',
    async () => {
      await withQueue('rewritten', async ({ clock, engine, broker, name, queue }) => {
        await queue.schedule('pulse', 1_000, { payload: { a: 1, b: [2] } });
        // As a restore or another version may have written it: the same definition.
        const transaction = engine.transaction;
        if (transaction === undefined) throw new Error('a SQL engine has transactions');
        await transaction.call(engine, (tx) =>
          tx.run('UPDATE leaseq_schedules SET spec = ? WHERE queue = ? AND name = ?', [
            '{ "payload": { "b": [2], "a": 1 }, "every": 1000 }',
            name,
            'pulse',
          ]),
        );
        clock.advance(1_000);
        const scheduler = broker.scheduler();
        expect(await ofQueue(name, scheduler.runOnce())).toMatchObject([
          { name: 'pulse', at: T0 + 1_000 },
        ]);
        expect(await ofQueue(name, scheduler.runOnce())).toEqual([]);
        const [job] = await queue.receive({ max: 10 });
        expect(job?.payload).toEqual({ a: 1, b: [2] });
      });
    },
  );

  it('R25 an occurrence is recorded once for payloads of every JSON shape', async () => {
    await withQueue('shapes', async ({ clock, broker, name, queue }) => {
      // What JSON writes in more than one way, or escapes: the definition read back from
      // storage must still name the stored one.
      const payload = {
        z: 1e21,
        a: [0.1, -0, 5e-324, 2 ** 53 + 2],
        '10': 'ten',
        '2': 'two',
        __proto__: null,
        text: 'é e\u0301 \u2028 "quoted" \\ \t 😀 <\u0000>',
        nested: { empty: {}, none: null, list: [] },
      };
      await queue.schedule('shapes', '* * * * *', { payload, timezone: 'Europe/Paris' });
      await queue.schedule('plain', 60_000);
      clock.advance(60_000);
      const scheduler = broker.scheduler();
      const published = await ofQueue(name, scheduler.runOnce());
      expect(published.map((occurrence) => occurrence.name).sort()).toEqual(['plain', 'shapes']);
      // Recorded: the same minute is not published again.
      expect(await ofQueue(name, scheduler.runOnce())).toEqual([]);
      const jobs = await queue.receive({ max: 10 });
      expect(jobs).toHaveLength(2);
      expect(jobs.find((job) => job.id.startsWith('shapes@'))?.payload).toEqual(
        JSON.parse(JSON.stringify(payload)),
      );
    });
  });
});
