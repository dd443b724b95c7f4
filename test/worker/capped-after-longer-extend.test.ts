import { expect, it } from 'vitest';
import { describeEngines, holding, workerEngines } from './engines.js';

const engines = await workerEngines();

// A renewal asks for the worker's visibility from now. Whether it asked for a later deadline
// than the one it got is judged from when the queue gave the current deadline: where the queue
// gave less than was asked (its maxLease), that is not the deadline less the lease asked then.
describeEngines(engines, 'maxLease after a longer extension', (open) => {
  it('a ctx.extend the maxLease cut short: the next renewal that meets the cap stops renewal, no burst of extends', async () => {
    const h = await open({ queueOptions: { visibility: 1000, maxDeliveries: 3, maxLease: 3000 } });
    // maxRenewals bounds what a renewal that does not see the cap would repeat.
    const { consumer, ctx } = await holding(h, { maxRenewals: 5 });
    await h.advance(10);
    // Asked for 5010, held at 3000: the deadline still moved later than it was.
    expect(await ctx.extend(5000)).toBe(3000);
    await h.advance(2900, { step: 50 });
    const extended = consumer.faults.calls.filter((call) => call.op === 'extend');
    // The renewal then due asked for about 3700 and got 3000: capped, and renewal stops.
    expect(extended.map((call) => call.result)).toEqual([3000, 3000]);
    // The one renewal counted is the ctx.extend: the capped renewal is not one.
    expect(consumer.worker.metrics().renewals).toBe(1);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(100);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired' });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    expect(consumer.faults.calls.filter((call) => call.op === 'extend')).toHaveLength(2);
  });

  it('a maxLease lowered in flight under a shorter ctx.extend: the next renewal that meets the cap stops renewal, no burst of extends', async () => {
    const h = await open();
    const { consumer, ctx } = await holding(h, { maxRenewals: 5 });
    await h.advance(10);
    expect(await ctx.extend(5000)).toBe(5010);
    await h.broker.updateQueue(h.queue.name, { maxLease: 1500 });
    await h.advance(10);
    // Asked for 3020, earlier than 5010: the lowered maxLease brings the deadline to 1500.
    expect(await ctx.extend(3000)).toBe(1500);
    await h.advance(1400, { step: 50 });
    const extended = consumer.faults.calls.filter((call) => call.op === 'extend');
    expect(extended.map((call) => call.result)).toEqual([5010, 1500, 1500]);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(100);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired' });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    expect(consumer.faults.calls.filter((call) => call.op === 'extend')).toHaveLength(3);
  });
});
