import { afterAll, describe, expect, it } from 'vitest';
import {
  build,
  type Delivery,
  EngineBroker,
  ManualClock,
  NotFoundError,
  SessionClosedError,
} from '../../src/index.js';
import { engineFactories, queueName } from '../conformance/engines.js';
import { countedQueue, settle } from './looks.js';

// A wake-up reaches one parked receiver per lane (receivers that can take the same jobs: those
// of one session, or those of none), which passes it on when it may have left something for
// the next: a publish costs the receivers parked on its queue a look or two, not one each.
const factories = engineFactories();
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

/** Resolves once `count` receivers sleep on `clock`, i.e. they are parked. */
async function parked(clock: ManualClock, count: number): Promise<void> {
  while (clock.waiting < count) await new Promise((resolve) => setImmediate(resolve));
}

/** Which of `receiving` have answered by now, by index. */
async function answered(receiving: Promise<unknown>[]): Promise<number[]> {
  const done: number[] = [];
  receiving.forEach((promise, index) => {
    void promise.then(
      () => done.push(index),
      () => done.push(index),
    );
  });
  await settle();
  return done.sort((a, b) => a - b);
}

/**
 * Which of `receiving` have answered once `count` have, or after 5 s of real time (a storage
 * round trip under load): the clocks of these tests never move, so no timer answers them.
 */
async function answeredBy(receiving: Promise<unknown>[], count: number): Promise<number[]> {
  const deadline = Date.now() + 5_000;
  let done = await answered(receiving);
  while (done.length < count && Date.now() < deadline) done = await answered(receiving);
  return done;
}

describe.each(factories)('parked receivers on $name', (factory) => {
  const setup = () => countedQueue(factory, 'lanes', 100);

  it('a publish with 60 receivers parked has a few of them look, not each', async () => {
    const { clock, queue, count, done } = await setup();
    const receiving = Array.from({ length: 60 }, () => queue.receive({ wait: 20_000 }));
    await parked(clock, 60);
    await settle();
    count.looks = 0;
    await queue.publish({ id: 'a' });
    const first = await Promise.race(receiving);
    expect(first.map((delivery) => delivery.id)).toEqual(['a']);
    await settle();
    // One takes the job; one more may look and find nothing left.
    expect(count.looks).toBeLessThanOrEqual(2);
    expect(clock.now()).toBe(1_000);
    await done();
    expect((await Promise.all(receiving)).flat().map((delivery) => delivery.id)).toEqual(['a']);
  });

  it('a receiver woken for a job that another lane took keeps its place in line, not parks behind those after it', async () => {
    const { clock, queue, count, done } = await setup();
    const first = queue.receive({ wait: 20_000 });
    await parked(clock, 1);
    const auto = queue.receive({ wait: 20_000, ack: 'auto' });
    await parked(clock, 2);
    const second = queue.receive({ wait: 20_000 });
    await parked(clock, 3);
    const third = queue.receive({ wait: 20_000 });
    await parked(clock, 4);
    await settle();
    count.autoLooks = 0;
    await queue.publish({ id: 'a' });
    expect((await first).map((delivery) => delivery.id)).toEqual(['a']);
    // The at-most-once receiver (a lane of its own) was woken too, looked, found nothing, and
    // is parked again, as are the other two.
    const deadline = Date.now() + 5_000;
    while ((count.autoLooks === 0 || clock.waiting < 3) && Date.now() < deadline) await settle();
    expect(count.autoLooks).toBeGreaterThan(0);
    expect(clock.waiting).toBe(3);
    // It waited longest: the next job is its, then one each for the others, in their order.
    await queue.publish({ id: 'b' });
    expect(await answeredBy([auto, second, third], 1)).toEqual([0]);
    expect((await auto).map((delivery) => delivery.id)).toEqual(['b']);
    await queue.publish({ id: 'c' });
    expect((await second).map((delivery) => delivery.id)).toEqual(['c']);
    await queue.publish({ id: 'd' });
    expect((await third).map((delivery) => delivery.id)).toEqual(['d']);
    expect(clock.now()).toBe(1_000);
    await done();
  });

  it('a batch published to parked receivers reaches as many of them as it has jobs', async () => {
    const { clock, queue, done } = await setup();
    const receiving = Array.from({ length: 5 }, () => queue.receive({ wait: 20_000 }));
    await parked(clock, 5);
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    expect(await answeredBy(receiving, 3)).toHaveLength(3);
    await queue.publishBatch([{ id: 'd' }, { id: 'e' }]);
    const all = await Promise.all(receiving);
    expect(all.map((deliveries) => deliveries.length)).toEqual([1, 1, 1, 1, 1]);
    expect(
      all
        .flat()
        .map((delivery) => delivery.id)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(clock.now()).toBe(1_000);
    await done();
  });

  it('R16 a receiver of a session at its prefetch, parked first, leaves a job to one parked behind it', async () => {
    const { clock, queue, done } = await setup();
    const session = await queue.openSession({ prefetch: 1 });
    await queue.publish({ id: 'held' });
    expect((await queue.receive({ session })).map((delivery) => delivery.id)).toEqual(['held']);
    const blocked = queue.receive({ session, wait: 20_000 });
    await parked(clock, 1);
    const free = queue.receive({ wait: 20_000 });
    await parked(clock, 2);
    await queue.publish({ id: 'b' });
    expect((await free).map((delivery) => delivery.id)).toEqual(['b']);
    expect(await answered([blocked])).toEqual([]);
    expect(clock.now()).toBe(1_000);
    await done();
    expect(await blocked).toEqual([]);
  });

  it('a receiver whose look is under way when the broker closes answers empty, as a parked one does', async () => {
    const { clock, broker, queue, count, done } = await setup();
    const session = await queue.openSession({ prefetch: 1 });
    await queue.publish({ id: 'held' });
    expect(await queue.receive({ session })).toHaveLength(1);
    const blocked = queue.receive({ session, wait: 20_000 });
    await parked(clock, 1);
    // A job due at 1,050 ends its sleep then: it looks (at its prefetch, to find nothing); the
    // broker closes as that look has gone to the storage.
    await queue.publish({ id: 'b', delay: 50 });
    await settle();
    count.afterLook = () => void broker.close();
    clock.advance(50);
    expect(await blocked).toEqual([]);
    expect(count.afterLook).toBeUndefined();
    await done();
  });

  it('a receive that waits, called just before the broker closes, answers empty', async () => {
    const { broker, queue, done } = await setup();
    const receiving = queue.receive({ wait: 20_000 });
    await broker.close();
    expect(await receiving).toEqual([]);
    await done();
  });

  it('R22 an at-most-once receiver parked behind one the full prefetch holds back takes the job', async () => {
    const { clock, broker, queue, done } = await setup();
    await broker.updateQueue(queue.name, { prefetch: 1 });
    await queue.publish({ id: 'held' });
    expect(await queue.receive()).toHaveLength(1);
    const manual = queue.receive({ wait: 20_000 });
    await parked(clock, 1);
    const auto = queue.receive({ wait: 20_000, ack: 'auto' });
    await parked(clock, 2);
    await queue.publish({ id: 'b' });
    // No prefetch bound applies at most once: the auto-ack receive takes it at once.
    expect((await auto).map((delivery) => delivery.id)).toEqual(['b']);
    expect(await answered([manual])).toEqual([]);
    expect(clock.now()).toBe(1_000);
    await done();
    expect(await manual).toEqual([]);
  });

  it('a woken receiver that leaves before the job is due passes the wake-up on', async () => {
    const { clock, queue, count, done } = await setup();
    const leaving = new AbortController();
    const first = queue.receive({ wait: 20_000, signal: leaving.signal });
    await parked(clock, 1);
    const second = queue.receive({ wait: 20_000 });
    await parked(clock, 2);
    await settle();
    count.looks = 0;
    // Due in 50 ms: the first receiver looks, finds nothing yet, and sleeps until then.
    await queue.publish({ id: 'later', delay: 50 });
    await settle();
    expect(count.looks).toBeGreaterThanOrEqual(1);
    leaving.abort();
    expect(await first).toEqual([]);
    await settle();
    // The second, which slept to the end of its wait, learnt of the job due at 1,050.
    clock.advance(50);
    const deliveries: Delivery[] = await second;
    expect(deliveries.map((delivery) => delivery.id)).toEqual(['later']);
    expect(clock.now()).toBe(1_050);
    await done();
  });

  it('a queue deleted under several parked receivers ends every wait with NOT_FOUND', async () => {
    const { clock, broker, queue, done } = await setup();
    const receiving = Array.from({ length: 4 }, () =>
      queue.receive({ wait: 20_000 }).then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
    await parked(clock, 4);
    expect(await broker.deleteQueue(queue.name)).toBe(true);
    for (const error of await Promise.all(receiving)) expect(error).toBeInstanceOf(NotFoundError);
    expect(clock.now()).toBe(1_000);
    await done();
  });
});

describe.each(factories.filter((factory) => factory.name !== 'memory'))(
  'receivers parked in one process, jobs published by another, on $name',
  (factory) => {
    it('a batch reaches as many parked receivers as it has jobs, without time passing', async () => {
      const clock = new ManualClock(1_000);
      const name = queueName('elsewhere');
      const here = new EngineBroker(await factory.open(), { clock });
      const there = new EngineBroker(await factory.open(), { clock });
      try {
        const queue = await here.queue(name, { visibility: 100 });
        const receiving = Array.from({ length: 3 }, () => queue.receive({ wait: 20_000 }));
        await parked(clock, 3);
        await settle();
        await (await there.queue(name)).publishBatch([{ id: 'a' }, { id: 'b' }]);
        // Woken by the other process's commit (NOTIFY, or a changed data_version): no timer
        // of this clock fires, so a receiver left parked would stay so.
        expect(await answeredBy(receiving, 2)).toHaveLength(2);
        await here.close();
        const all = (await Promise.all(receiving)).flat();
        expect(all.map((delivery) => delivery.id).sort()).toEqual(['a', 'b']);
      } finally {
        await here.close();
        await there.deleteQueue(name);
        await there.close();
      }
    });
  },
);

// Receivers in sessions of their own are a lane each. Every engine hands jobs over in the
// transaction (on memory, the step) that makes them ready, which has then already offered them
// to every waiting receiver: the others look again only if they would otherwise sleep past the
// queue's next event, so a publish or an ack costs them no look each.
describe.each(factories)('receivers parked in sessions of their own on $name', (factory) => {
  async function setup(sessions: number) {
    const { clock, queue, count, done } = await countedQueue(factory, 'session-lanes', 100);
    const ids: string[] = [];
    for (let i = 0; i < sessions; i++) ids.push(await queue.openSession({ prefetch: 1 }));
    return { clock, queue, count, ids, done };
  }

  it('a publish and its ack with 30 session receivers parked have none of the others look', async () => {
    const { clock, queue, count, ids, done } = await setup(30);
    const receiving = ids.map((session) => queue.receive({ session, wait: 20_000 }));
    await parked(clock, 30);
    await settle();
    count.looks = 0;
    await queue.publish({ id: 'a' });
    const taken = await Promise.race(receiving);
    expect(taken.map((delivery) => delivery.id)).toEqual(['a']);
    await settle();
    expect(count.looks).toBeLessThanOrEqual(1);
    count.looks = 0;
    expect(await queue.ack((taken[0] as Delivery).token)).toBe(true);
    await settle();
    expect(count.looks).toBeLessThanOrEqual(1);
    expect(clock.waiting).toBe(29);
    expect(clock.now()).toBe(1_000);
    await done();
  });

  it('R16 a job published while the first session is at its prefetch goes to the next, and an ack lets the first take the one after', async () => {
    const { clock, queue, ids, done } = await setup(2);
    const [full, free] = ids as [string, string];
    await queue.publish({ id: 'held' });
    const [held] = await queue.receive({ session: full });
    const blocked = queue.receive({ session: full, wait: 20_000 });
    await parked(clock, 1);
    const other = queue.receive({ session: free, wait: 20_000 });
    await parked(clock, 2);
    await queue.publish({ id: 'b' });
    expect((await other).map((delivery) => delivery.id)).toEqual(['b']);
    expect(await answered([blocked])).toEqual([]);
    // The ack frees room in the first session; the job published next is its.
    expect(await queue.ack((held as Delivery).token)).toBe(true);
    await queue.publish({ id: 'c' });
    expect((await answeredBy([blocked], 1)).length).toBe(1);
    expect((await blocked).map((delivery) => delivery.id)).toEqual(['c']);
    expect(clock.now()).toBe(1_000);
    await done();
  });

  it('R16 a session receiver parked with nothing ready is refused as soon as its session closes', async () => {
    const { clock, queue, ids, done } = await setup(2);
    const [closed, other] = ids as [string, string];
    const refused = queue.receive({ session: closed, wait: 20_000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await parked(clock, 1);
    const waiting = queue.receive({ session: other, wait: 20_000 });
    await parked(clock, 2);
    await queue.closeSession(closed);
    expect(await refused).toBeInstanceOf(SessionClosedError);
    expect(await answered([waiting])).toEqual([]);
    expect(clock.now()).toBe(1_000);
    await done();
  });

  it('R22 R16 what an at-most-once receive of a session takes leaves its session room to a receive of it that acks', async () => {
    const { clock, queue, ids, done } = await setup(3);
    const [full1, full2, shared] = ids as [string, string, string];
    await queue.publishBatch([{ id: 'h1' }, { id: 'h2' }]);
    expect(await queue.receive({ session: full1 })).toHaveLength(1);
    expect(await queue.receive({ session: full2 })).toHaveLength(1);
    const blocked = [
      queue.receive({ session: full1, wait: 20_000 }),
      queue.receive({ session: full2, wait: 20_000 }),
    ];
    await parked(clock, 2);
    const auto = queue.receive({ session: shared, ack: 'auto', wait: 20_000 });
    await parked(clock, 3);
    const manual = queue.receive({ session: shared, wait: 20_000 });
    await parked(clock, 4);
    await queue.publishBatch([{ id: 'x' }, { id: 'y' }]);
    expect((await auto).map((delivery) => delivery.id)).toEqual(['x']);
    expect(await answeredBy([manual], 1)).toEqual([0]);
    expect((await manual).map((delivery) => delivery.id)).toEqual(['y']);
    expect(await answered(blocked)).toEqual([]);
    expect(clock.now()).toBe(1_000);
    await done();
  });

  it('R16 a session receive is in place before its look: a publish that commits during the look reaches it with no look again', async () => {
    // What lets a served wake-up during the look pass it by (see QueueHandle.reserveOnReady):
    // whichever commits first, the publish or the look, the job is handed to the receive.
    const engine = await factory.open();
    const name = queueName('in-place');
    try {
      const handle = await engine.queue(name, { visibility: 100 });
      const session = await handle.openSession(1_000, { prefetch: 1 });
      for (let round = 0; round < 10; round++) {
        const stop = new AbortController();
        const waiting = handle.reserveOnReady?.(1_000, build.reserve({ session }), stop.signal);
        expect(waiting?.inPlaceBefore).toBe(true);
        const published = handle.run(1_000, build.publish({ id: `job-${round}` }));
        await waiting?.armed;
        await published;
        const [taken] = await answeredBy([waiting?.deliveries as Promise<Delivery[]>], 1).then(
          async (done) => (done.length === 1 ? await waiting?.deliveries : []) ?? [],
        );
        expect(taken?.id).toBe(`job-${round}`);
        stop.abort();
        expect(await handle.ack(1_000, (taken as Delivery).token)).toBe(true);
      }
    } finally {
      await engine.deleteQueue(name).catch(() => false);
      await engine.close();
    }
  });

  it('R3 a job whose lease runs out reaches a session receiver that was parked before it was handed out', async () => {
    const { clock, queue, ids, done } = await setup(2);
    const [first, second] = ids as [string, string];
    const taking = queue.receive({ session: first, wait: 20_000 });
    await parked(clock, 1);
    const waiting = queue.receive({ session: second, wait: 20_000 });
    await parked(clock, 2);
    await settle();
    // Handed to the first, never acked: its lease ends at 1,100, which the second, parked
    // with nothing to wait for, must learn of, or it sleeps to the end of its wait.
    await queue.publish({ id: 'lost' });
    expect((await taking).map((delivery) => delivery.id)).toEqual(['lost']);
    await settle();
    const deadline = Date.now() + 5_000;
    while (clock.waiting < 1 && Date.now() < deadline) await settle();
    clock.advance(100);
    const [again] = await waiting;
    expect(again?.id).toBe('lost');
    expect(again?.deliveryCount).toBe(2);
    expect(clock.now()).toBe(1_100);
    await done();
  });
});
