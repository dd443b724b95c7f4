import type { Engine, QueueHandle } from '../../src/engine/index.js';
import { EngineBroker, ManualClock, type Operation, type Queue } from '../../src/index.js';
import { type EngineFactory, queueName } from '../conformance/engines.js';

/** How many looks (reserves) receivers made, of them at most once (`ack: 'auto'`). */
export interface LookCount {
  looks: number;
  autoLooks: number;
  /** When set, runs (once) as the next look has gone to the storage. */
  afterLook?: () => void;
}

/** Counts the reserves receivers make through the engine's handles of `name`. */
export function countLooks(engine: Engine, name: string): LookCount {
  const count: LookCount = { looks: 0, autoLooks: 0 };
  const looked = <T>(look: T, auto = false): T => {
    count.looks += 1;
    if (auto) count.autoLooks += 1;
    const after = count.afterLook;
    count.afterLook = undefined;
    after?.();
    return look;
  };
  const original = engine.queue.bind(engine);
  engine.queue = async (queue, options) => {
    const handle = await original(queue, options);
    if (queue !== name) return handle;
    const wrapped: QueueHandle = Object.create(handle);
    const isReserve = (operation: Operation | undefined) => operation?.type === 'reserve';
    const isAuto = (operation: Operation) =>
      operation.type === 'reserve' && operation.ack === 'auto';
    wrapped.run = ((now: number, operation: Operation) => {
      const running = handle.run(now, operation);
      return isReserve(operation) ? looked(running, isAuto(operation)) : running;
    }) as QueueHandle['run'];
    wrapped.execute = (now, operations) => {
      const running = handle.execute(now, operations);
      return operations.some(isReserve) ? looked(running) : running;
    };
    wrapped.reserve = (now, options, allowed) => looked(handle.reserve(now, options, allowed));
    if (handle.reserveOnReady !== undefined) {
      const reserveOnReady = handle.reserveOnReady.bind(handle);
      wrapped.reserveOnReady = (now, operation, signal, place) =>
        looked(reserveOnReady(now, operation, signal, place), isAuto(operation));
    }
    return wrapped;
  };
  return count;
}

/** Lets pending callbacks, timers of 0 ms and storage round trips run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * A broker on a manual clock (at 1,000) over an engine of `factory`, and a fresh queue in it
 * named after `prefix` whose looks are counted; `done` closes the broker first (its parked
 * receivers answer empty; deleted first, they would learn NOT_FOUND), then deletes the queue.
 */
export async function countedQueue(
  factory: EngineFactory,
  prefix: string,
  visibility: number,
): Promise<{
  clock: ManualClock;
  broker: EngineBroker;
  queue: Queue;
  count: LookCount;
  done: () => Promise<void>;
}> {
  const engine = await factory.open();
  const name = queueName(prefix);
  const count = countLooks(engine, name);
  const clock = new ManualClock(1_000);
  const broker = new EngineBroker(engine, { clock });
  const queue = await broker.queue(name, { visibility });
  const done = async () => {
    await broker.close();
    if (factory.name === 'memory') return;
    const storage = await factory.open();
    await storage.deleteQueue(name).catch(() => false);
    await storage.close();
  };
  return { clock, broker, queue, count, done };
}
