import { describe, expect, it } from 'vitest';
import { ManualClock, open } from '../../src/index.js';

// broker.statsOfQueues (what /metrics and GET /v1/stats read) over memory: a call of a queue
// made while the read is under way runs at the clock's later time; the read's step of that
// queue must not then run at the time read before it (R2 would refuse it).
describe('statsOfQueues over memory with calls made meanwhile', () => {
  it('R17 answers the figures after a publish made while the read was under way', async () => {
    const clock = new ManualClock(1_000);
    const broker = await open('memory:', { clock });
    try {
      const orders = await broker.queue('orders');
      const billing = await broker.queue('billing', { deadLetterQueue: 'orders' });
      await orders.publish({ id: 'a' });
      await billing.publish({ id: 'b' });
      const reading = broker.statsOfQueues?.(['orders', 'billing']);
      clock.advance(5);
      await orders.publish({ id: 'c' });
      await billing.publish({ id: 'd' });
      const figures = await reading;
      expect(figures?.get('orders')).toEqual(await orders.stats());
      expect(figures?.get('orders')).toMatchObject({ queueTime: 1_005, published: 2, ready: 2 });
      expect(figures?.get('billing')).toMatchObject({ queueTime: 1_005, published: 2, ready: 2 });
    } finally {
      await broker.close();
    }
  });
});
