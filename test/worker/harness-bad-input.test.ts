import { afterEach, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/queue.js';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/open.js';
import { Harness } from '../../src/testing/index.js';

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

it('advance refuses a time or step that is not a whole number of ms, before any clock moves', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 1000 } });
  harnesses.push(h);
  const consumer = h.process(async () => {});
  const refused: [unknown, unknown, string][] = [
    [Number.NaN, undefined, 'advance: ms must be an integer ≥ 0, got NaN'],
    [Number.POSITIVE_INFINITY, undefined, 'advance: ms must be an integer ≥ 0, got Infinity'],
    [1.5, undefined, 'advance: ms must be an integer ≥ 0, got 1.5'],
    [-5, undefined, 'advance: ms must be an integer ≥ 0, got -5'],
    ['10', undefined, 'advance: ms must be an integer ≥ 0, got "10"'],
    [10, { step: Number.NaN }, 'advance: step must be a positive integer (ms), got NaN'],
    [10, { step: 0 }, 'advance: step must be a positive integer (ms), got 0'],
    [10, { stepp: 1 }, 'advance: unknown option "stepp"'],
    [10, null, 'advance: options must be an object, got null'],
    [Number.MAX_SAFE_INTEGER, undefined, 'advance: ms must keep the time a safe integer'],
  ];
  await h.advance(5);
  for (const [ms, options, message] of refused) {
    const moved = h.advance(ms as number, options as { step?: number });
    await expect(moved).rejects.toBeInstanceOf(ValidationError);
    await expect(moved).rejects.toThrow(message);
  }
  expect(h.clock.now()).toBe(5);
  expect(consumer.clock.now()).toBe(5);
  // The broker and the process still work on that clock.
  await h.queue.publish({ id: 'a' });
  await consumer.worker.runOnce();
  expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
  await h.advance(0);
  await h.advance(10, { step: 3 });
  expect(h.clock.now()).toBe(15);
});

it('Harness.open refuses a bad start and unknown options before it opens a broker', async () => {
  let connected = 0;
  const connect = async () => {
    connected += 1;
    return open('memory:');
  };
  const refused: [unknown, string][] = [
    [{ start: Number.NaN, connect }, 'Harness.open: start must be an integer ≥ 0 (ms), got NaN'],
    [{ start: -1, connect }, 'Harness.open: start must be an integer ≥ 0 (ms), got -1'],
    [{ strat: 5, connect }, 'Harness.open: unknown option "strat"'],
    [{ connect: 'memory:' }, 'Harness.open: connect must be a function, got "memory:"'],
    [null, 'Harness.open: options must be an object, got null'],
  ];
  for (const [options, message] of refused) {
    const opening = Harness.open(options as never);
    await expect(opening).rejects.toBeInstanceOf(ValidationError);
    await expect(opening).rejects.toThrow(message);
  }
  expect(connected).toBe(0);
});

it('Harness.open closes the broker it opened when the queue options are refused', async () => {
  let broker: Broker | undefined;
  const opening = Harness.open({
    connect: async (clock) => {
      broker = await open('memory:', { clock });
      return broker;
    },
    queueOptions: { visibility: 0 },
  });
  await expect(opening).rejects.toBeInstanceOf(ValidationError);
  // Closed: its calls fail as a closed broker's do.
  await expect(broker?.listQueues()).rejects.toMatchObject({ code: 'CLOSED' });
});
