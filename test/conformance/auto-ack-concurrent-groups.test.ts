import { describe, expect, it } from 'vitest';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

// The SQL engines run concurrent reserves of a queue at one tick in one transaction; each call
// is still answered as if it ran alone, one after the other in the order they were made.
const engines = await useConformanceEngines({ client: false });

describeEngines(engines, (h) => {
  describe('R22 R24 concurrent auto-ack reserves of a grouped queue', () => {
    it('R24 each call takes the member its group went on to after the call before it', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'g1', group: 'G' },
        { id: 'g2', group: 'G' },
        { id: 'g3', group: 'G' },
      ]);
      const answers = await Promise.all([
        q.reserve(1, { ack: 'auto' }),
        q.reserve(1, { ack: 'auto' }),
        q.reserve(1, { ack: 'auto' }),
      ]);
      expect(answers.map((deliveries) => deliveries.map((delivery) => delivery.id))).toEqual([
        ['g1'],
        ['g2'],
        ['g3'],
      ]);
      expect(await q.stats(1)).toMatchObject({ ready: 0, waiting: 0, autoAcked: 3 });
    });

    it('R23 R24 a member that went on at a higher priority is taken before older jobs', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'g1', group: 'G' },
        { id: 'g2', group: 'G', priority: 9 },
        { id: 'x' },
      ]);
      const answers = await Promise.all([
        q.reserve(1, { ack: 'auto' }),
        q.reserve(1, { ack: 'auto' }),
      ]);
      expect(answers.map((deliveries) => deliveries.map((delivery) => delivery.id))).toEqual([
        ['g1'],
        ['g2'],
      ]);
      expect((await q.inspect()).ready).toEqual(['x']);
    });
  });
});
