import { expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { Gate, type Harness, ManualClock, silentLogger } from '../../src/testing/index.js';
import { type OutcomeRecord, Worker, type WorkerOptions } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/** The harness's queue with its acks, receives and extends counted; `ackMany` may be replaced. */
function countingQueue(h: Harness, ackMany?: Queue['ackMany']) {
  const calls = { ack: 0, ackMany: [] as number[][], receive: [] as number[], extend: 0 };
  const queue: Queue = Object.create(h.queue, {
    ack: {
      value: (token: number) => {
        calls.ack += 1;
        return h.queue.ack(token);
      },
    },
    ackMany: {
      value: (tokens: readonly number[]) => {
        calls.ackMany.push([...tokens]);
        return (ackMany ?? ((t) => h.queue.ackMany(t)))(tokens);
      },
    },
    receive: {
      value: (options: Parameters<Queue['receive']>[0]) => {
        calls.receive.push(options?.max ?? 1);
        return h.queue.receive(options);
      },
    },
    extend: {
      value: (token: number, visibility: number) => {
        calls.extend += 1;
        return h.queue.extend(token, visibility);
      },
    },
  });
  return { queue, calls };
}

function workerOver(h: Harness, queue: Queue, options: WorkerOptions, handler = async () => {}) {
  const worker = new Worker(queue, handler, { clock: h.clock, logger: silentLogger, ...options });
  const outcomes: OutcomeRecord[] = [];
  worker.on('outcome', (record) => outcomes.push(record));
  return { worker, outcomes };
}

describeEngines(engines, 'per-job cost', (open) => {
  it('the acks of jobs settled in one tick go out as one ackMany; a lone job uses ack', async () => {
    const h = await open();
    const { queue, calls } = countingQueue(h);
    // The handlers end together when the gate opens. Started back to back, they need not end in
    // one tick: a start that holds the loop for a while (a busy machine) has the worker let the
    // loop turn before the next one starts, and the jobs before that turn settle in a tick of
    // their own.
    const gate = new Gate();
    const { worker, outcomes } = workerOver(h, queue, { concurrency: 4 }, () => gate.pass());
    await h.queue.publishBatch(['a', 'b', 'c', 'd'].map((id) => ({ id })));
    expect(await worker.runOnce()).toBe(4);
    await gate.arrivedAt(4);
    await h.flush();
    expect(calls.ack).toBe(0);
    expect(calls.ackMany).toEqual([]);
    gate.open();
    await h.flush();
    expect(calls.ackMany).toEqual([[1, 2, 3, 4]]);
    expect(outcomes.map((record) => [record.id, record.outcome])).toEqual([
      ['a', 'acked'],
      ['b', 'acked'],
      ['c', 'acked'],
      ['d', 'acked'],
    ]);
    await h.queue.publish({ id: 'e' });
    expect(await worker.runOnce()).toBe(1);
    await h.flush();
    expect(calls.ack).toBe(1);
    expect(calls.ackMany).toHaveLength(1);
    expect((await h.queue.stats()).acks).toBe(5);
    await worker.close();
  });

  it('in a coalesced ack a stale token loses only its own job (R8)', async () => {
    const h = await open();
    const { queue } = countingQueue(h);
    const gate = new Gate();
    // The worker's clock stays at 0: only the broker sees a's lease run out.
    const { worker, outcomes } = workerOver(
      h,
      queue,
      { concurrency: 2, renew: 'never', clock: new ManualClock(0) },
      () => gate.pass(),
    );
    await h.queue.publish({ id: 'a' });
    await worker.runOnce();
    h.clock.set(600);
    await h.queue.publish({ id: 'b' });
    await worker.runOnce();
    h.clock.set(1100);
    gate.open();
    await h.flush();
    expect(outcomes.map((r) => [r.id, r.outcome, r.reason])).toEqual([
      ['a', 'lease-lost', 'stale-ack'],
      ['b', 'acked', undefined],
    ]);
    expect(worker.metrics()).toMatchObject({ staleAcks: 1, outcomes: { acked: 1 } });
    await worker.close();
  });

  it('a coalesced ack that throws fails every job in it, each counted and reported', async () => {
    const h = await open();
    const { queue } = countingQueue(h, () =>
      Promise.reject(new StorageUnavailableError('database down')),
    );
    // Ended together by the gate, in one tick (see the first test).
    const gate = new Gate();
    const { worker, outcomes } = workerOver(h, queue, { concurrency: 3 }, () => gate.pass());
    const errors: string[] = [];
    worker.on('error', (_error, during) => errors.push(during));
    await h.queue.publishBatch(['a', 'b', 'c'].map((id) => ({ id })));
    await worker.runOnce();
    await gate.arrivedAt(3);
    gate.open();
    await h.flush();
    expect(outcomes.map((r) => [r.outcome, r.reason, r.error])).toEqual(
      Array(3).fill(['lease-lost', 'settle-failed', 'acked not settled: database down']),
    );
    expect(errors).toEqual(['settle', 'settle', 'settle']);
    expect(worker.metrics().settleErrors).toBe(3);
    await worker.close();
  });

  it('slots freed in one tick are refilled by one receive for all of them', async () => {
    const h = await open();
    const { queue, calls } = countingQueue(h);
    const gate = new Gate();
    const { worker, outcomes } = workerOver(h, queue, { concurrency: 4 }, () => gate.pass());
    await h.queue.publishBatch(Array.from({ length: 8 }, (_, n) => ({ id: `j${n}` })));
    await worker.start();
    await gate.arrivedAt(4);
    gate.open();
    await gate.arrivedAt(8);
    await h.flush();
    expect(outcomes).toHaveLength(8);
    // The first fill, one refill of the 4 freed slots, then the wait for more.
    expect(calls.receive).toEqual([4, 4, 4]);
    await worker.close();
  });

  it('one timer keeps the leases of every job in hand', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(() => gate.pass(), { concurrency: 3 });
    await h.queue.publishBatch(['a', 'b', 'c'].map((id) => ({ id })));
    expect(await consumer.worker.runOnce()).toBe(3);
    await h.flush();
    expect(consumer.clock.waiting).toBe(1);
    await h.advance(700);
    expect(consumer.worker.metrics().renewals).toBe(3);
    expect(consumer.clock.waiting).toBe(1);
    gate.open();
    for (let n = 0; n < 3; n++) expect((await consumer.nextOutcome()).outcome).toBe('acked');
    // Stepped by hand and empty-handed: no timer is left to keep the process alive.
    expect(consumer.clock.waiting).toBe(0);
  });

  it('a signal first read after the lease was lost is already aborted with its reason', async () => {
    const h = await open();
    const gate = new Gate();
    const contexts: { signal: AbortSignal }[] = [];
    const consumer = h.process(
      async (_job, ctx) => {
        contexts.push(ctx);
        await gate.pass();
      },
      { renew: 'never' },
    );
    await h.queue.publish({ id: 'a' });
    await consumer.worker.runOnce();
    await h.advance(1000);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
    const signal = contexts[0]?.signal;
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired', id: 'a' });
    expect(contexts[0]?.signal).toBe(signal);
    gate.open();
  });

  it('the context methods work when destructured', async () => {
    const h = await open();
    const consumer = h.process(
      async (_job, { extend, progress, duplicate, deadline }) => {
        progress({ step: 1 });
        expect(await extend(5000)).toBe(5000);
        expect(deadline).toBe(1000);
        duplicate();
      },
      { renew: 'on-progress' },
    );
    await h.queue.publish({ id: 'a' });
    await consumer.worker.runOnce();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'duplicate' });
  });
});
