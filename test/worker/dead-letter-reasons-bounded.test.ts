import { expect, it } from 'vitest';
import { Harness } from '../../src/testing/index.js';
import { PermanentError } from '../../src/worker/index.js';
import {
  MAX_OWN_DEAD_LETTER_REASONS,
  OTHER_DEAD_LETTER_REASONS,
} from '../../src/worker/metrics.js';

it('metrics count the dead letters of at most MAX_OWN_DEAD_LETTER_REASONS reasons of the handlers own apart, the rest together, the worker reasons always apart', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 1000, maxDeliveries: 1 } });
  try {
    const own = MAX_OWN_DEAD_LETTER_REASONS + 20;
    const payloads = [
      ...Array.from({ length: own }, (_, n) => `own ${n}`),
      'own 0',
      `own ${own - 1}`,
      'permanent',
      'retries-exhausted',
    ];
    await h.queue.publishBatch(payloads.map((payload) => ({ payload })));
    const consumer = h.process<string>(
      async (job) => {
        if (job.payload === 'retries-exhausted') throw new Error('failed');
        if (job.payload === 'permanent') throw new PermanentError('refused');
        throw new PermanentError('refused', { reason: job.payload });
      },
      { concurrency: 1 },
    );
    for (let settled = 0; settled < payloads.length; ) {
      const started = await consumer.worker.runOnce();
      for (let n = 0; n < started; n++) await consumer.nextOutcome();
      settled += started;
    }
    const { deadLetters, outcomes } = consumer.worker.metrics();
    expect(outcomes.dead).toBe(payloads.length);
    const expected: Record<string, number> = {};
    for (let n = 0; n < MAX_OWN_DEAD_LETTER_REASONS; n++) expected[`own ${n}`] = 1;
    expected['own 0'] = 2;
    expected[OTHER_DEAD_LETTER_REASONS] = own - MAX_OWN_DEAD_LETTER_REASONS + 1;
    expected.permanent = 1;
    expected['retries-exhausted'] = 1;
    expect(deadLetters).toEqual(expected);
  } finally {
    await h.close();
  }
});
