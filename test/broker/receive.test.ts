import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import {
  EngineBroker,
  ManualClock,
  MemoryEngine,
  NotFoundError,
  type Operation,
  open,
  type QueueHandle,
  SystemClock,
} from '../../src/index.js';
import { collectWarnings } from '../process-warnings.js';

// The Broker's receive: long waits without polling, woken by publishes, bounded by `wait`.
async function setup() {
  const clock = new ManualClock(1_000);
  const engine = new MemoryEngine();
  const broker = new EngineBroker(engine, { clock });
  const queue = await broker.queue('jobs', { visibility: 100 });
  return { clock, engine, broker, queue };
}

/** Resolves once `clock` has a sleeper, i.e. the receive is parked. */
async function parked(clock: ManualClock): Promise<void> {
  while (clock.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
}

describe('receive with wait', () => {
  it('answers as soon as a job is published, without time passing', async () => {
    const { clock, queue, broker } = await setup();
    const receiving = queue.receive({ wait: 20_000 });
    await parked(clock);
    await queue.publish({ id: 'a' });
    const deliveries = await receiving;
    expect(deliveries.map((delivery) => [delivery.id, delivery.token])).toEqual([['a', 1]]);
    expect(clock.now()).toBe(1_000);
    await broker.close();
  });

  it('sleeps through a wait longer than a timer takes (2^31 - 1 ms), without polling', async () => {
    const clock = new SystemClock();
    const sleep = vi.spyOn(clock, 'sleep');
    const broker = new EngineBroker(new MemoryEngine(), { clock });
    const queue = await broker.queue('jobs');
    const warnings = collectWarnings();
    const controller = new AbortController();
    const receiving = queue.receive({ wait: 1e12, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // A timer of more than 2^31 - 1 ms fires at once: each would have been another reserve.
    expect(sleep.mock.calls.length).toBe(1);
    controller.abort();
    expect(await receiving).toEqual([]);
    expect(warnings.stop()).toEqual([]);
    await broker.close();
  });

  it('answers empty when the wait runs out', async () => {
    const { clock, queue, broker } = await setup();
    const receiving = queue.receive({ wait: 500 });
    await parked(clock);
    clock.advance(499);
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(1);
    expect(await receiving).toEqual([]);
    await broker.close();
  });

  it('looks once more when the wait runs out: a job due at its very end is taken', async () => {
    const { clock, queue, broker } = await setup();
    await queue.publish({ id: 'a', delay: 500 });
    const receiving = queue.receive({ wait: 500 });
    await parked(clock);
    clock.advance(500);
    expect((await receiving).map((delivery) => delivery.id)).toEqual(['a']);
    await broker.close();
  });

  it('wakes at a lease deadline within the wait and takes the reclaimed job', async () => {
    const { clock, queue, broker } = await setup();
    await queue.publish({ id: 'a' });
    const [first] = await queue.receive();
    expect(first?.deadline).toBe(1_100);
    const receiving = queue.receive({ wait: 1_000 });
    await parked(clock);
    clock.advance(100);
    const [again] = await receiving;
    expect(again).toMatchObject({ id: 'a', token: 2, deliveryCount: 2, redelivered: true });
    await broker.close();
  });

  it('wakes sooner when an extend shortens the lease it sleeps until', async () => {
    const { clock, queue, broker } = await setup();
    await queue.publish({ id: 'a' });
    const [first] = await queue.receive({ visibility: 10_000 });
    const receiving = queue.receive({ wait: 20_000 });
    await parked(clock);
    expect(await queue.extend(first?.token as number, 50)).toBe(1_050);
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(50);
    const [again] = await receiving;
    expect(again).toMatchObject({ id: 'a', token: 2, deliveryCount: 2 });
    expect(clock.now()).toBe(1_050);
    await broker.close();
  });

  it('does not miss a publish that lands between the empty reserve and the wait', async () => {
    const { clock, engine, queue: _unused } = await setup();
    const broker = new EngineBroker(wrapEngine(engine, 'jobs'), { clock });
    const queue = await broker.queue('jobs');
    // The wrapped engine publishes right after a reserve answers empty, before receive can park.
    const deliveries = await queue.receive({ wait: 20_000 });
    expect(deliveries.map((delivery) => delivery.id)).toEqual(['late']);
    expect(clock.now()).toBe(1_000);
    await broker.close();

    function wrapEngine(inner: MemoryEngine, name: string): MemoryEngine {
      let published = false;
      const original = inner.queue.bind(inner);
      inner.queue = async (queueName, options) => {
        const handle = await original(queueName, options);
        if (queueName !== name) return handle;
        const execute = handle.execute.bind(handle);
        const run = handle.run.bind(handle);
        const wrapped: QueueHandle = Object.create(handle);
        // The broker reaches the engine by `execute` or, for one operation, by `run`.
        const publishAfterEmptyReserve = async (now: number, type: string, value: unknown) => {
          const empty = Array.isArray(value) && value.length === 0;
          if (type === 'reserve' && empty && !published) {
            published = true;
            await handle.publish(now, { id: 'late' });
          }
        };
        wrapped.execute = async (now, operations) => {
          const outcomes = await execute(now, operations);
          const [outcome] = outcomes;
          if (outcome?.ok === true) {
            await publishAfterEmptyReserve(now, operations[0]?.type ?? '', outcome.value);
          }
          return outcomes;
        };
        wrapped.run = (async (now: number, operation: Operation) => {
          const value = await run(now, operation);
          await publishAfterEmptyReserve(now, operation.type, value);
          return value;
        }) as QueueHandle['run'];
        return wrapped;
      };
      return inner;
    }
  });

  it('an aborted signal ends the wait with an empty answer', async () => {
    const { clock, queue, broker } = await setup();
    const controller = new AbortController();
    const receiving = queue.receive({ wait: 20_000, signal: controller.signal });
    await parked(clock);
    controller.abort();
    expect(await receiving).toEqual([]);
    expect(clock.waiting).toBe(0);
    await broker.close();
  });

  it('many receives waiting on one signal hold one listener on it, and none after', async () => {
    const { clock, queue, broker } = await setup();
    const warnings = collectWarnings();
    const controller = new AbortController();
    const receiving = Array.from({ length: 40 }, () =>
      queue.receive({ wait: 20_000, signal: controller.signal }),
    );
    while (clock.waiting < 40) await new Promise((resolve) => setImmediate(resolve));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect((await Promise.all(receiving)).flat()).toEqual([]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(clock.waiting).toBe(0);
    await broker.close();
    // Node warns of a leak past ten listeners on one signal (the broker's close signal too).
    expect(warnings.stop()).toEqual([]);
  });

  it('a queue deleted while a receive waits ends the wait at once with NOT_FOUND', async () => {
    for (const url of ['memory:', 'sqlite::memory:']) {
      const clock = new ManualClock(1_000);
      const broker = await open(url, { clock });
      const queue = await broker.queue('doomed');
      const receiving = queue.receive({ wait: 20_000 }).then(
        () => undefined,
        (error: unknown) => error,
      );
      await parked(clock);
      expect(await broker.deleteQueue('doomed')).toBe(true);
      const error = await receiving;
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).code).toBe('NOT_FOUND');
      // No time passed: woken by the delete, not by the end of its wait.
      expect(clock.now()).toBe(1_000);
      await broker.close();
    }
  });

  it('closing the broker answers waiting receives empty', async () => {
    const { clock, queue, broker } = await setup();
    const receiving = queue.receive({ wait: 20_000 });
    await parked(clock);
    await broker.close();
    expect(await receiving).toEqual([]);
  });

  it('a bad wait is a ValidationError and reserves nothing', async () => {
    const { queue, broker } = await setup();
    await queue.publish({ id: 'a' });
    for (const wait of [-1, 1.5, Number.NaN]) {
      await expect(queue.receive({ wait })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect((await queue.inspect()).ready).toEqual(['a']);
    await broker.close();
  });
});
