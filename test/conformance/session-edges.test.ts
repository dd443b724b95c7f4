import { describe, expect, it } from 'vitest';
import { view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R16 sessions: more cases', () => {
    it('R16 a delivery released by closeSession is delivered again with deliveryCount + 1; no expiry is counted', async () => {
      const q = await h.queue();
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd'].map((id) => ({ id })),
      );
      const s = await q.openSession(0);
      await q.reserve(0, { max: 2, session: s }); // 1 a, 2 b
      await q.reserve(0); // 3 c
      expect(await q.closeSession(1, s)).toBe(2);
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['a', 'b', 'd'],
          active: [{ token: 3, id: 'c', deadline: 30_000, deliveryCount: 1 }],
        }),
      );
      expect(await q.ack(1, 1)).toBe(false);
      expect((await q.reserve(2))[0]).toMatchObject({
        token: 4,
        id: 'a',
        deliveryCount: 2,
        redelivered: true,
      });
      expect(await q.stats(2)).toMatchObject({ sessions: 0, sessionReleases: 2, expiries: 0 });
    });

    it('R16 R13 closeSession counts only live deliveries, and R13 applies to the released ones', async () => {
      const q = await h.queue({ maxDeliveries: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const s = await q.openSession(0);
      await q.reserve(0, { session: s, visibility: 2 }); // 1 a, expires at 2
      await q.reserve(0, { session: s, visibility: 10 }); // 2 b
      expect(await q.closeSession(5, s)).toBe(1);
      expect(await q.inspect()).toEqual(
        view(5, {
          ready: ['c'],
          dead: [
            { id: 'a', reason: 'max-deliveries', deliveryCount: 1 },
            { id: 'b', reason: 'max-deliveries', deliveryCount: 1 },
          ],
        }),
      );
      expect(await q.stats(5)).toMatchObject({ expiries: 1, sessionReleases: 1 });
    });

    it('R16 R17 the sessions gauge counts open sessions: a timeout and a close each end one', async () => {
      const q = await h.queue();
      const ids = [
        await q.openSession(0),
        await q.openSession(0, { timeout: 3 }),
        await q.openSession(1),
      ];
      expect(new Set(ids).size).toBe(3);
      expect((await q.stats(2)).sessions).toBe(3);
      expect((await q.stats(3)).sessions).toBe(2);
      await q.closeSession(4, ids[0] as string);
      expect((await q.stats(4)).sessions).toBe(1);
    });
  });
});
