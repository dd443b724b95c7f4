import { expect, it } from 'vitest';
import { describeEngines, holding, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'on-progress renewal', (open) => {
  it('a progress report made while a renewal is on its way counts for the next renewal', async () => {
    const h = await open();
    const { consumer, ctx, extends_ } = await holding(h, { renew: 'on-progress' });
    ctx.progress({ step: 1 });
    // The renewal due at 700 reaches the queue; its answer is read only after the next report.
    consumer.faults.failRenewals({ mode: 'late', count: 1 });
    await h.advance(700);
    expect(extends_()).toHaveLength(1);
    await h.advance(50);
    ctx.progress({ step: 2 });
    consumer.faults.heal();
    await h.flush();
    expect(ctx.deadline).toBe(1700);
    // Renewed again for the report made while the first renewal was on its way.
    await h.advance(950, { step: 50 });
    expect(extends_()).toHaveLength(2);
    expect(ctx.signal.aborted).toBe(false);
    expect(ctx.deadline).toBeGreaterThan(1700);
    // No report since: the lease then ends.
    await h.advance(1000, { step: 50 });
    expect(extends_()).toHaveLength(2);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired' });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    expect(consumer.worker.metrics().renewals).toBe(2);
  });
});
