import { expect, it } from 'vitest';
import { Gate } from '../../src/testing/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'start while a runOnce waits', (open, engine) => {
  it('the fetch loop fetches for the slots a waiting runOnce left unfilled', async () => {
    const h = await open();
    const gates = new Map<string, Gate>();
    const consumer = h.process(
      async (job) => {
        const gate = new Gate();
        gates.set(job.id, gate);
        await gate.pass();
      },
      { concurrency: 2 },
    );
    const stepped = consumer.worker.runOnce({ wait: 5000 });
    await h.flush();
    await consumer.worker.start();
    await h.flush();
    await h.queue.publish({ id: 'a' });
    expect(await stepped).toBe(1);
    await h.flush();
    // One slot is still free: a job published now is taken by the loop.
    await h.queue.publish({ id: 'b' });
    await h.flush();
    expect([...gates.keys()]).toEqual(['a', 'b']);
    for (const gate of gates.values()) gate.open();
    const ids = [(await consumer.nextOutcome()).id, (await consumer.nextOutcome()).id];
    expect(ids.sort()).toEqual(['a', 'b']);
  });

  // Over the stream the wait is the client's own, timed by its real clock, which the harness
  // does not move.
  it.skipIf(engine.name === 'stream')(
    'the fetch loop fetches once a waiting runOnce ends empty',
    async () => {
      const h = await open();
      const consumer = h.process(async () => {}, { wait: 20_000 });
      const stepped = consumer.worker.runOnce({ wait: 5000 });
      await h.flush();
      await consumer.worker.start();
      await h.advance(5000);
      expect(await stepped).toBe(0);
      await h.queue.publish({ id: 'a' });
      await h.flush();
      expect(consumer.outcomes).toMatchObject([{ id: 'a', outcome: 'acked' }]);
    },
  );
});
