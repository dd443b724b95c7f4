import { describe, expect, it } from 'vitest';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R17 dead letters are counted by reason kind', () => {
    it('R17 free-text reasons add no counter key: each counts under one fixed kind, the text stays on the job', async () => {
      const q = await h.queue({ maxDeliveries: 1 });
      const reasons = Array.from({ length: 40 }, (_, index) => `card declined #${index}`);
      await q.publishBatch(
        0,
        reasons.map((_, index) => ({ id: `j${index}` })),
      );
      await q.publishBatch(0, [
        { id: 'default' },
        { id: 'exhausted' },
        { id: 'ambiguous' },
        { id: 'permanent' },
        { id: 'expires' },
      ]);
      const deliveries = await q.reserve(1, { max: reasons.length + 5 });
      for (const [index, reason] of reasons.entries()) {
        const token = deliveries[index]?.token as number;
        expect(await q.nack(2, token, { requeue: false, reason })).toBe(true);
      }
      const byId = new Map(deliveries.map((d) => [d.id, d.token]));
      await q.nack(2, byId.get('default') as number, { requeue: false });
      await q.nack(2, byId.get('exhausted') as number, {
        requeue: false,
        reason: 'retries-exhausted',
      });
      await q.reject(2, byId.get('ambiguous') as number, { requeue: false, reason: 'ambiguous' });
      await q.reject(2, byId.get('permanent') as number, { requeue: false, reason: 'permanent' });
      // The lease of 'expires' runs out with maxDeliveries 1: R13.
      const stats = await q.stats(1 + 30_000);
      expect(stats.deadLetters).toEqual({
        rejected: 41,
        'retries-exhausted': 1,
        ambiguous: 1,
        permanent: 1,
        'max-deliveries': 1,
      });
      const dead = await q.deadLetters();
      expect(dead.find((job) => job.id === 'j7')?.reason).toBe('card declined #7');
      expect((await q.job('j39'))?.reason).toBe('card declined #39');
      expect(dead.find((job) => job.id === 'expires')?.reason).toBe('max-deliveries');
    });

    it("R17 a nack's reason that names one of the queue's own kinds counts as rejected: only the queue's own deaths are expired, maxlen, cancelled or max-deliveries", async () => {
      const q = await h.queue({ maxDeliveries: 5 });
      const reasons = ['expired', 'maxlen', 'cancelled', 'max-deliveries', 'permanent'];
      await q.publishBatch(
        0,
        reasons.map((reason) => ({ id: reason })),
      );
      for (const delivery of await q.reserve(1, { max: reasons.length })) {
        expect(await q.nack(2, delivery.token, { requeue: false, reason: delivery.id })).toBe(true);
      }
      const stats = await q.stats(3);
      expect(stats.deadLetters).toEqual({ rejected: 4, permanent: 1 });
      expect(stats).toMatchObject({ expired: 0, cancelled: 0 });
      // The text stays on the job as given (R14).
      expect((await q.job('expired'))?.reason).toBe('expired');
    });

    // Skipped where the engine has no stored counters to read back (memory).
    it.skipIf(h.capabilities?.transactions !== true)(
      'R17 counters stored by free-text reason (before kinds) are read folded into their kinds',
      async () => {
        const engine = h.engine();
        if (engine.transaction === undefined) throw new Error('a SQL engine has transactions');
        const name = h.queueName('legacy');
        const q = await engine.queue(name, { maxDeliveries: 1 });
        await q.publish(0, { id: 'a' });
        const [delivery] = await q.reserve(0);
        await q.nack(1, delivery?.token as number, { requeue: false, reason: 'poison' });
        await engine.transaction(async (tx) => {
          const [row] = await tx.query<{ counters: string }>(
            'SELECT counters FROM leaseq_queues WHERE name = ?',
            [name],
          );
          const counters = JSON.parse(row?.counters ?? '{}');
          counters.deadLetters = { poison: 2, 'card declined': 3, 'max-deliveries': 1 };
          await tx.run('UPDATE leaseq_queues SET counters = ? WHERE name = ?', [
            JSON.stringify(counters),
            name,
          ]);
        });
        expect((await q.stats(2)).deadLetters).toEqual({ rejected: 5, 'max-deliveries': 1 });
      },
    );
  });
});
