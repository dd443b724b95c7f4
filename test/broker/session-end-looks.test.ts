import { afterAll, describe, expect, it } from 'vitest';
import type { Engine, QueueHandle } from '../../src/engine/index.js';
import { EngineBroker, ManualClock, type Operation, SessionClosedError } from '../../src/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';

// R16: a session's end makes the receives waiting in it look, to learn so, and offers what it
// released to the others in its own step: the receives of other sessions need not look. Each
// of a thousand receives waiting in a session of its own looked at every session's end: 200
// closes took 91 s on the memory engine (1,000 looks each), 50 took 7.7 s on SQLite.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** Counts the reserves receivers make through the engine's handles of `name`. */
function countLooks(engine: Engine, name: string): { looks: number } {
  const count = { looks: 0 };
  const original = engine.queue.bind(engine);
  engine.queue = async (queue, options) => {
    const handle = await original(queue, options);
    if (queue !== name) return handle;
    const wrapped: QueueHandle = Object.create(handle);
    const isReserve = (operation: Operation) => operation.type === 'reserve';
    wrapped.run = ((now: number, operation: Operation) => {
      if (isReserve(operation)) count.looks += 1;
      return handle.run(now, operation);
    }) as QueueHandle['run'];
    wrapped.execute = (now, operations) => {
      if (operations.some(isReserve)) count.looks += 1;
      return handle.execute(now, operations);
    };
    wrapped.reserve = (now, options, allowed) => {
      count.looks += 1;
      return handle.reserve(now, options, allowed);
    };
    if (handle.reserveOnReady !== undefined) {
      const reserveOnReady = handle.reserveOnReady.bind(handle);
      wrapped.reserveOnReady = (now, operation, signal, place) => {
        count.looks += 1;
        return reserveOnReady(now, operation, signal, place);
      };
    }
    return wrapped;
  };
  return count;
}

/** Resolves once `count` receivers sleep on `clock`, i.e. they are parked. */
async function parked(clock: ManualClock, count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (clock.waiting < count && Date.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(clock.waiting).toBe(count);
}

/** Lets pending callbacks, timers of 0 ms and storage round trips run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe.each(factories)('receives parked in sessions of their own on $name', (factory) => {
  async function setup() {
    const engine = await factory.open();
    const name = queueName('session-end-looks');
    const count = countLooks(engine, name);
    const clock = new ManualClock(1_000);
    const broker = new EngineBroker(engine, { clock });
    const queue = await broker.queue(name, { visibility: 100_000 });
    const done = async () => {
      await broker.close();
      if (factory.name === 'memory') return;
      const storage = await factory.open();
      await storage.deleteQueue(name).catch(() => false);
      await storage.close();
    };
    return { clock, queue, count, done };
  }

  it('R16 a session closed with 30 others parked has its own receive look, and none of theirs', async () => {
    const { clock, queue, count, done } = await setup();
    const others: string[] = [];
    for (let i = 0; i < 30; i++) others.push(await queue.openSession());
    const closing = await queue.openSession();
    await queue.publish({ id: 'a' });
    expect((await queue.receive({ session: closing })).map((delivery) => delivery.id)).toEqual([
      'a',
    ]);
    const refused = queue.receive({ session: closing, wait: 20_000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await parked(clock, 1);
    const receiving = others.map((session) => queue.receive({ session, wait: 20_000 }));
    await parked(clock, 31);
    await settle();
    count.looks = 0;
    // The close releases `a`, handed to the receive that waited longest in its step.
    expect(await queue.closeSession(closing)).toBe(1);
    expect(await refused).toBeInstanceOf(SessionClosedError);
    expect((await receiving[0])?.map((delivery) => delivery.id)).toEqual(['a']);
    await settle();
    // The closed session's receive looked (and was refused); no other looked.
    expect(count.looks).toBe(1);
    expect(clock.waiting).toBe(29);
    expect(clock.now()).toBe(1_000);
    await done();
  });
});
