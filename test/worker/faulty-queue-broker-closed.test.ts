import { afterEach, expect, it } from 'vitest';
import { Harness } from '../../src/testing/index.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

it('a process of leaseq/testing, a worker over its FaultyQueue, closes by itself when the broker is closed under it', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 60_000 } });
  harnesses.push(h);
  const consumer = h.process(async () => {}, { concurrency: 2 });
  const closed: unknown[] = [];
  consumer.worker.on('closed', (cause) => closed.push((cause as { code?: unknown }).code));
  await consumer.worker.start();
  await h.queue.publish({ id: 'a' });
  expect((await consumer.nextOutcome()).outcome).toBe('acked');
  // The FaultyQueue passes the real queue's `closed` on: the worker tells its broker closed.
  expect(consumer.faults.closed).toBe(false);
  await h.broker.close();
  expect(consumer.faults.closed).toBe(true);
  await h.advance(1000, { step: 100 });
  expect(consumer.worker.state).toBe('closed');
  expect(closed).toEqual(['CLOSED']);
  expect(consumer.worker.metrics().fetchErrors).toBe(1);
});

it('a process of leaseq/testing with every slot taken learns of the close as it begins, through its FaultyQueue', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 60_000 } });
  harnesses.push(h);
  const signals: AbortSignal[] = [];
  const consumer = h.process(
    (_job, ctx) => {
      signals.push(ctx.signal);
      return new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
    },
    { concurrency: 1 },
  );
  await consumer.worker.start();
  await h.queue.publish({ id: 'a' });
  await h.flush();
  expect(signals).toHaveLength(1);
  await h.broker.close();
  await h.flush();
  // No receive is under way (the one slot is taken): only the close itself can tell it.
  expect(consumer.worker.state).toBe('closing');
  await h.advance(30_000, { step: 1000 });
  expect(signals[0]?.aborted).toBe(true);
  expect((signals[0]?.reason as { code?: unknown } | undefined)?.code).toBe('WORKER_CLOSING');
});
