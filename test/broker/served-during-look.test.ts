import { describe, expect, it } from 'vitest';
import type { Engine, QueueHandle, WakeListener } from '../../src/engine/index.js';
import { type Delivery, EngineBroker, ManualClock, MemoryEngine } from '../../src/index.js';

// A served wake-up (the transaction that made jobs ready already offered them to the waiting
// receives) that comes while a receive in a session is in the middle of its look: the look
// may have missed the jobs only if the receive was not yet among those the engine serves. One
// that was in place before its look (`inPlaceBefore`) looks no second time, but still sleeps no
// later than the queue's next event the wake-up told (R3).
describe('a served wake-up during the look of a receive in a session', () => {
  /** A broker whose queue handle's waiting receives are armed when the test says so. */
  async function setup(inPlaceBefore: boolean) {
    const engine: Engine = new MemoryEngine();
    let listener: WakeListener | undefined;
    const onWake = engine.onWake.bind(engine);
    engine.onWake = (wake) => {
      listener = wake;
      return onWake(wake);
    };
    const looks: { arm: (next: number | undefined) => void }[] = [];
    const queueOf = engine.queue.bind(engine);
    engine.queue = async (name, options) => {
      const handle = await queueOf(name, options);
      const wrapped: QueueHandle = Object.create(handle);
      wrapped.reserveOnReady = (_now, _operation, signal) => {
        let arm!: (next: number | undefined) => void;
        const armed = new Promise<number | undefined>((resolve) => {
          arm = resolve;
          // A broker closing stops the look too (it answers empty).
          signal.addEventListener('abort', () => resolve(undefined), { once: true });
        });
        looks.push({ arm });
        const deliveries = new Promise<Delivery[]>((resolve) => {
          signal.addEventListener('abort', () => resolve([]), { once: true });
        });
        return { deliveries, armed, inPlaceBefore };
      };
      return wrapped;
    };
    const clock = new ManualClock(1_000);
    const broker = new EngineBroker(engine, { clock });
    const queue = await broker.queue('q', { visibility: 100 });
    const session = await queue.openSession({ prefetch: 1 });
    const receiving = queue.receive({ session, wait: 20_000 });
    await until(() => looks.length === 1);
    const served = (nextEventAt: number) =>
      (listener as WakeListener)('q', { nextEventAt, unseen: [] });
    return { broker, clock, looks, receiving, served };
  }

  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 1_000 && !check(); i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(check()).toBe(true);
  }

  async function settle(): Promise<void> {
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  }

  it('R16 R3 one in place before its look does not look again, and wakes at the next event told', async () => {
    const { broker, clock, looks, receiving, served } = await setup(true);
    served(1_500);
    looks[0]?.arm(undefined);
    await settle();
    expect(looks).toHaveLength(1);
    // Parked until the time the served wake-up told (a lease handed out meanwhile ends then).
    await until(() => clock.waiting === 1);
    clock.advance(499);
    await settle();
    expect(looks).toHaveLength(1);
    clock.advance(1);
    await until(() => looks.length === 2);
    await broker.close();
    expect(await receiving).toEqual([]);
  });

  it('one not yet in place when its look began looks again', async () => {
    const { broker, looks, receiving, served } = await setup(false);
    served(1_500);
    looks[0]?.arm(undefined);
    await until(() => looks.length === 2);
    await broker.close();
    expect(await receiving).toEqual([]);
  });
});
