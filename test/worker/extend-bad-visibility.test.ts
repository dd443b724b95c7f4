import { afterEach, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { Harness } from '../../src/testing/index.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

it('ctx.extend refuses a bad visibility with a ValidationError that shows it, the lease left as it was', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 1000 } });
  harnesses.push(h);
  const refused: unknown[] = [];
  const deadlines: number[] = [];
  const consumer = h.process(async (_job, ctx) => {
    const before = ctx.deadline;
    for (const visibility of [Symbol('later'), '5000', 10n, {}]) {
      refused.push(await ctx.extend(visibility as number).catch((error: unknown) => error));
    }
    deadlines.push(before, ctx.deadline);
  });
  await h.queue.publish({ id: 'a' });
  await consumer.worker.runOnce();
  expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
  for (const error of refused) expect(error).toBeInstanceOf(ValidationError);
  expect(refused.map((error) => (error as ValidationError).message)).toEqual([
    'extend: visibility must be a positive integer (ms), got symbol',
    'extend: visibility must be a positive integer (ms), got "5000"',
    'extend: visibility must be a positive integer (ms), got bigint',
    'extend: visibility must be a positive integer (ms), got object',
  ]);
  // Nothing was asked of the queue: no extend went out, the deadline did not move.
  expect(consumer.faults.calls.filter((call) => call.op === 'extend')).toEqual([]);
  expect(deadlines[1]).toBe(deadlines[0]);
});
