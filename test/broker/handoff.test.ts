import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock, openEngine } from '../../src/index.js';
import { recordCommitKinds } from '../engine/commit-kind-spy.js';
import { temporaryDirectory } from '../temporary-directory.js';

// On SQLite a waiting receiver is handed its job by the transaction that commits the publish:
// one synced commit between publish and handler, not the publish's and then the receiver's.
const dir = temporaryDirectory('leaseq-handoff-');
afterEach(() => {
  vi.restoreAllMocks();
});

let files = 0;

async function setup() {
  const kinds = recordCommitKinds();
  files += 1;
  const engine = await openEngine(`sqlite:${join(dir, `handoff-${files}.db`)}`);
  const clock = new ManualClock(1_000);
  const broker = new EngineBroker(engine, { clock });
  const queue = await broker.queue('jobs', { visibility: 100 });
  return { clock, broker, queue, kinds };
}

/** Resolves once `count` receivers sleep on `clock`, i.e. they are parked. */
async function parked(clock: ManualClock, count = 1): Promise<void> {
  while (clock.waiting < count) await new Promise((resolve) => setImmediate(resolve));
}

describe('SQLite: a waiting receiver is handed its job in the publish transaction', () => {
  it('the publish commit also commits the reservation: one synced commit, nothing after', async () => {
    const { clock, broker, queue, kinds } = await setup();
    await queue.publish({ id: 'warm-up' });
    await queue.ack((await queue.receive())[0]?.token as number); // the first token block's mark
    const receiving = queue.receive({ wait: 20_000 });
    await parked(clock);
    kinds.length = 0;
    await queue.publish({ id: 'a', payload: { n: 1 } });
    const deliveries = await receiving;
    expect(deliveries).toEqual([
      {
        token: 2,
        id: 'a',
        payload: { n: 1 },
        deadline: 1_100,
        deliveryCount: 1,
        redelivered: false,
      },
    ]);
    expect(kinds).toEqual(['durable', 'sync']);
    expect(await queue.ack(2)).toBe(true);
    await broker.close();
  });

  it('R32 a receive waits after one empty reserve and one transaction that arms it, no other', async () => {
    const { clock, broker, queue, kinds } = await setup();
    const handle = (queue as unknown as { handle: Record<string, unknown> }).handle;
    const calls: string[] = [];
    for (const name of ['run', 'nextEventAt', 'reserveOnReady']) {
      const method = handle[name] as (...args: unknown[]) => unknown;
      handle[name] = (...args: unknown[]) => {
        calls.push(name);
        return method.apply(handle, args);
      };
    }
    kinds.length = 0;
    const receiving = queue.receive({ wait: 20_000 });
    await parked(clock);
    // Nothing between the reserve that found no job and the handoff being in place: a publish
    // then lands on a waiting receiver, never between a second reserve and the wait.
    expect(calls).toEqual(['run', 'reserveOnReady']);
    expect(kinds).toEqual(['lease', 'lease']);
    await queue.publish({ id: 'a' });
    expect((await receiving).map((delivery) => delivery.id)).toEqual(['a']);
    await broker.close();
  });

  it('R32 a publish submitted while the receiver arms is handed over in its own commit', async () => {
    const { broker, queue, kinds } = await setup();
    await queue.publish({ id: 'warm-up' });
    await queue.ack((await queue.receive())[0]?.token as number); // the first token block's mark
    const handle = (queue as unknown as { handle: Record<string, unknown> }).handle;
    const arm = handle.reserveOnReady as (...args: unknown[]) => unknown;
    let publishing: Promise<unknown> | undefined;
    handle.reserveOnReady = (...args: unknown[]) => {
      const waiting = arm.apply(handle, args);
      // Submitted before the arming transaction has run.
      publishing ??= queue.publish({ id: 'a' });
      return waiting;
    };
    kinds.length = 0;
    const deliveries = await queue.receive({ wait: 20_000 });
    expect(deliveries.map((delivery) => [delivery.id, delivery.token])).toEqual([['a', 2]]);
    await publishing;
    // The empty reserve, the arming (nothing ready yet), the publish that hands the job over.
    expect(kinds).toEqual(['lease', 'lease', 'durable', 'sync']);
    await broker.close();
  });

  it('a storage failure while arming is thrown, unless a publish handed a job over meanwhile', async () => {
    const { broker, queue } = await setup();
    const handle = (queue as unknown as { handle: Record<string, unknown> }).handle;
    const arm = handle.reserveOnReady as (...args: unknown[]) => {
      deliveries: Promise<unknown>;
      armed: Promise<unknown>;
    };
    const failure = new Error('storage gone');
    let publishFirst = false;
    handle.reserveOnReady = (...args: unknown[]) => {
      const waiting = arm.apply(handle, args);
      const armed = waiting.armed
        .then(() => (publishFirst ? queue.publish({ id: 'a' }) : undefined))
        .then(() => {
          throw failure;
        });
      return { deliveries: waiting.deliveries, armed };
    };
    await expect(queue.receive({ wait: 20_000 })).rejects.toBe(failure);
    publishFirst = true;
    const deliveries = await queue.receive({ wait: 20_000 });
    expect(deliveries.map((delivery) => delivery.id)).toEqual(['a']);
    expect((await queue.inspect()).active.map((live) => live.id)).toEqual(['a']);
    await broker.close();
  });

  it('R3 arming serves the jobs ready by then: a lease that ran out is taken again at once', async () => {
    const { clock, broker, queue } = await setup();
    await queue.publish({ id: 'a' });
    const [first] = await queue.receive();
    expect(first?.deadline).toBe(1_100);
    const receiving = queue.receive({ wait: 20_000 });
    await parked(clock);
    clock.advance(100);
    const [again] = await receiving;
    expect(again).toMatchObject({ id: 'a', token: 2, deliveryCount: 2, redelivered: true });
    expect(await queue.ack(first?.token as number)).toBe(false);
    await broker.close();
  });

  it('first come, first served: one job for two waiting receivers, the next for the other', async () => {
    const { clock, broker, queue } = await setup();
    const first = queue.receive({ wait: 20_000 });
    await parked(clock);
    const second = queue.receive({ wait: 20_000 });
    await parked(clock, 2);
    await queue.publish({ id: 'a' });
    expect((await first).map((delivery) => delivery.id)).toEqual(['a']);
    await queue.publish({ id: 'b' });
    expect((await second).map((delivery) => delivery.id)).toEqual(['b']);
    expect((await queue.inspect()).ready).toEqual([]);
    await broker.close();
  });

  it('hands a receiver at most its max, and leaves the rest ready', async () => {
    const { clock, broker, queue } = await setup();
    const receiving = queue.receive({ wait: 20_000, max: 2 });
    await parked(clock);
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    expect((await receiving).map((delivery) => delivery.id)).toEqual(['a', 'b']);
    expect((await queue.inspect()).ready).toEqual(['c']);
    await broker.close();
  });

  it('a receiver that stopped waiting is handed nothing: the job stays ready', async () => {
    const { clock, broker, queue } = await setup();
    const stop = new AbortController();
    const receiving = queue.receive({ wait: 20_000, signal: stop.signal });
    await parked(clock);
    stop.abort();
    expect(await receiving).toEqual([]);
    await queue.publish({ id: 'a' });
    expect((await queue.inspect()).ready).toEqual(['a']);
    await broker.close();
  });

  it('a receiver of another queue is not handed this one’s jobs', async () => {
    const { clock, broker, queue } = await setup();
    const other = await broker.queue('other');
    const stop = new AbortController();
    const receiving = other.receive({ wait: 20_000, signal: stop.signal });
    await parked(clock);
    await queue.publish({ id: 'a' });
    expect((await queue.inspect()).ready).toEqual(['a']);
    stop.abort();
    expect(await receiving).toEqual([]);
    await broker.close();
  });
});
