import { afterEach, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { Harness } from '../../src/testing/index.js';
import { recordingLogger } from './log-lines.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

async function stepped() {
  const h = await Harness.open({ queueOptions: { visibility: 1000 } });
  harnesses.push(h);
  const logger = recordingLogger();
  const consumer = h.process(async () => {}, { logger });
  const errors: unknown[] = [];
  consumer.worker.on('error', (error) => errors.push(error));
  await h.queue.publish({ id: 'a' });
  return { h, consumer, logger, errors };
}

it('runOnce refuses options that are not an object, unknown keys and a bad wait before fetching', async () => {
  const { h, consumer, logger, errors } = await stepped();
  const refused: [unknown, string][] = [
    [null, 'runOnce: options must be an object, got null'],
    ['fast', 'runOnce: options must be an object, got "fast"'],
    [[], 'runOnce: options must be an object, got an array'],
    [{ wiat: 10 }, 'runOnce: unknown option "wiat"'],
    [{ wait: -1 }, 'runOnce: wait must be an integer ≥ 0 (ms), got -1'],
    [{ wait: 1.5 }, 'runOnce: wait must be an integer ≥ 0 (ms), got 1.5'],
    [{ wait: '10' }, 'runOnce: wait must be an integer ≥ 0 (ms), got "10"'],
  ];
  for (const [options, issue] of refused) {
    const run = consumer.worker.runOnce(options as { wait?: number });
    await expect(run).rejects.toBeInstanceOf(ValidationError);
    await expect(run).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', issues: [issue] });
  }
  // Nothing was fetched, counted or logged as a failed fetch.
  expect(consumer.faults.calls).toEqual([]);
  expect(consumer.worker.metrics()).toMatchObject({ fetchErrors: 0, received: 0 });
  expect(errors).toEqual([]);
  expect(logger.lines).toEqual([]);
  expect((await h.queue.inspect()).ready).toEqual(['a']);
  // What it takes still works.
  expect(await consumer.worker.runOnce(undefined)).toBe(1);
  expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
  expect(await consumer.worker.runOnce({ wait: 0 })).toBe(0);
  expect(await consumer.worker.runOnce({})).toBe(0);
});
