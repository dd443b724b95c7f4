import { expect, it } from 'vitest';
import { Gate } from '../../src/testing/index.js';
import type { WorkerErrorSource } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'a queue deleted under a last delivery', (open) => {
  it('a handler that throws on its last delivery, its queue deleted meanwhile, ends as queue-deleted with no failure reported', async () => {
    const h = await open({ queueOptions: { visibility: 1000, maxDeliveries: 1 } });
    const gate = new Gate();
    const consumer = h.process(async (_job, ctx) => {
      await gate.pass(ctx.signal);
      throw new Error('failed');
    });
    const errors: { during: WorkerErrorSource; message: string }[] = [];
    consumer.worker.on('error', (error, during) =>
      errors.push({ during, message: (error as Error).message }),
    );
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await gate.arrivedAt(1);
    await h.broker.deleteQueue(h.queue.name);
    // Its last delivery: before it dies of maxDeliveries the worker reads the queue's options
    // again, and finds the queue gone.
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'a',
      outcome: 'lease-lost',
      reason: 'queue-deleted',
    });
    expect(errors).toEqual([]);
    expect(consumer.worker.metrics()).toMatchObject({ settleErrors: 0, leasesLost: 1 });
  });
});
