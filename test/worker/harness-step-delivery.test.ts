import { expect, it } from 'vitest';
import { Gate, Harness } from '../../src/testing/index.js';

// A step of the harness moves every clock together: a job handed to a waiting receive in that
// step (its lease ran out on another process) is timed by its new process from the step's time,
// not from the time before it, so its lease is the whole lease the queue gave.
it('a job redelivered to a waiting process during a step keeps the whole of its lease there', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 1000, maxDeliveries: 5 } });
  try {
    const gate = new Gate();
    // The first process takes the job and dies with it; the second waits for work.
    const held = new Gate();
    const first = h.process(async (_job, ctx) => held.pass(ctx.signal), { renew: 'never' });
    await h.queue.publish({ id: 'a' });
    expect(await first.worker.runOnce()).toBe(1);
    await held.arrivedAt(1);
    first.crash();
    const second = h.process(async (_job, ctx) => gate.pass(ctx.signal), { renew: 'never' });
    second.worker.start();
    await h.flush();
    // At 1000 the first lease ends and the job goes to the waiting second process.
    await h.advance(1000);
    expect((await h.queue.inspect()).active).toMatchObject([{ id: 'a', deadline: 2000 }]);
    await h.advance(999);
    expect(second.outcomes).toEqual([]);
    gate.open();
    expect(await second.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
  } finally {
    await h.close();
  }
});
