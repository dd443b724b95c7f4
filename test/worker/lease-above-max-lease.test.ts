import { expect, it } from 'vitest';
import { LeaseLostError } from '../../src/worker/index.js';
import { describeEngines, holding, workerEngines } from './engines.js';

const engines = await workerEngines();

// R10: a lease asked longer than the queue's maxLease is cut to it from the reservation on. The
// worker times the job's lease by what the queue gave: its handler learns the lease is lost when
// the queue ends it, not when the longer lease it asked for would have ended.
describeEngines(engines, 'a lease longer than maxLease', (open) => {
  it('R10 the handler signal fires at the maxLease, not at the visibility asked', async () => {
    const h = await open({ queueOptions: { visibility: 1000, maxLease: 300 } });
    const { consumer, gate, ctx } = await holding(h);
    expect((await h.queue.inspect()).active).toMatchObject([{ id: 'a', deadline: 300 }]);
    await h.advance(299);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(1);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    gate.open();
  });
});
