import { afterEach, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/queue.js';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/open.js';
import { Gate, Harness, ManualClock } from '../../src/testing/index.js';

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

it('ManualClock refuses a time or step that is not a whole number of ms, and stays where it was', async () => {
  const refused: [() => unknown, string][] = [
    [() => new ManualClock(Number.NaN), 'ManualClock: start must be an integer ≥ 0 (ms), got NaN'],
    [() => new ManualClock(-5), 'ManualClock: start must be an integer ≥ 0 (ms), got -5'],
    [
      () => new ManualClock('10' as never),
      'ManualClock: start must be an integer ≥ 0 (ms), got "10"',
    ],
  ];
  const clock = new ManualClock(10);
  const woken: number[] = [];
  void clock.sleep(5).then(() => woken.push(clock.now()));
  refused.push(
    [() => clock.advance(Number.NaN), 'ManualClock.advance: ms must be an integer ≥ 0, got NaN'],
    [() => clock.advance(1.5), 'ManualClock.advance: ms must be an integer ≥ 0, got 1.5'],
    [() => clock.advance(-1), 'ManualClock.advance: ms must be an integer ≥ 0, got -1'],
    [() => clock.advance('5' as never), 'ManualClock.advance: ms must be an integer ≥ 0, got "5"'],
    [
      () => clock.advance(Number.MAX_SAFE_INTEGER),
      'ManualClock.advance: ms must keep the time a safe integer',
    ],
    [
      () => clock.set(Number.POSITIVE_INFINITY),
      'ManualClock.set: time must be an integer ≥ 0 (ms), got Infinity',
    ],
    [() => clock.set(5), 'ManualClock cannot go back from 10 to 5'],
  );
  for (const [call, message] of refused) {
    expect(call).toThrow(ValidationError);
    expect(call).toThrow(message);
  }
  expect(clock.now()).toBe(10);
  expect(clock.waiting).toBe(1);
  clock.advance(5);
  await Promise.resolve();
  expect(woken).toEqual([15]);
});

it('ManualClock: a sleep of NaN ms ends at once, as a timer does, instead of never', async () => {
  const clock = new ManualClock(0);
  let slept = false;
  const sleeping = clock.sleep(Number.NaN).then(() => {
    slept = true;
  });
  clock.advance(1000);
  await Promise.race([sleeping, new Promise((resolve) => setImmediate(resolve))]);
  expect(slept).toBe(true);
  expect(clock.waiting).toBe(0);
});

it('Gate.arrivedAt refuses a count that is not a whole number instead of waiting for ever', async () => {
  const gate = new Gate();
  for (const count of [Number.NaN, 1.5, -1, '2']) {
    const settled = await Promise.race([
      gate.arrivedAt(count as number).then(
        () => 'resolved',
        (error: unknown) => error,
      ),
      new Promise((resolve) => setImmediate(() => resolve('still waiting'))),
    ]);
    expect(settled).toBeInstanceOf(ValidationError);
    expect(settled).toMatchObject({
      message: expect.stringContaining('arrivedAt: count must be an integer ≥ 0, got'),
    });
  }
  const arrived = gate.arrivedAt(2);
  void gate.pass();
  void gate.pass();
  await arrived;
  expect(gate.arrived).toBe(2);
  await gate.arrivedAt(0);
});
