import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { Gate, Harness } from '../../src/testing/index.js';
import { type JobContext, LeaseLostError, type WorkerOptions } from '../../src/worker/index.js';
import { VISIBILITY_READ_EVERY_MS } from '../../src/worker/worker.js';
import { describeEngines, holding, QUEUE, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'lease renewal', (open) => {
  it('auto: renews when two thirds of the lease have passed, for as long as the handler runs', async () => {
    const h = await open();
    const { consumer, gate, ctx, extends_, deadline } = await holding(h);
    await h.advance(600);
    expect(extends_()).toHaveLength(0);
    await h.advance(100);
    expect(await deadline()).toBe(1700);
    expect(ctx.deadline).toBe(1700);
    await h.advance(10_000, { step: 100 });
    expect(ctx.signal.aborted).toBe(false);
    const renewals = extends_().length;
    expect(renewals).toBeGreaterThanOrEqual(15);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked', durationMs: 10_700 });
    expect(consumer.worker.metrics().renewals).toBe(renewals);
  });

  it('auto: stops renewing when maxLease holds the deadline (R10); the lease then ends', async () => {
    const h = await open({ queueOptions: { visibility: 1000, maxDeliveries: 3, maxLease: 1500 } });
    const { consumer, ctx, extends_, settles, deadline } = await holding(h);
    await h.advance(700);
    expect(await deadline()).toBe(1500);
    await h.advance(500);
    expect(extends_().map((call) => call.result)).toEqual([1500, 1500]);
    await h.advance(200);
    expect(extends_()).toHaveLength(2);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(100);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired', token: 1 });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    expect(settles()).toEqual([]);
    expect(consumer.worker.metrics()).toMatchObject({ renewals: 1, leasesLost: 1, inHand: 0 });
    const [again] = await h.queue.receive();
    expect(again).toMatchObject({ id: 'a', deliveryCount: 2, token: 2 });
  });

  it('auto: a maxLease lowered in flight brings the deadline earlier, and the signal fires at it (R10)', async () => {
    const h = await open();
    const { consumer, ctx, extends_, settles, deadline } = await holding(h);
    await h.advance(700);
    expect(ctx.deadline).toBe(1700);
    await h.broker.updateQueue(h.queue.name, { maxLease: 1500 });
    await h.advance(700, { step: 100 });
    expect(extends_().map((call) => call.result)).toEqual([1700, 1500]);
    expect(await deadline()).toBe(1500);
    expect(ctx.deadline).toBe(1500);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(100);
    // The queue hands the job out again from 1500 on: its holder must know by then.
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired', token: 1 });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
      durationMs: 1500,
    });
    expect(settles()).toEqual([]);
    expect(await h.queue.receive()).toMatchObject([{ id: 'a', token: 2 }]);
  });

  it('maxRenewals bounds the automatic renewals', async () => {
    const h = await open();
    const { consumer, ctx, extends_ } = await holding(h, { maxRenewals: 2 });
    await h.advance(2300, { step: 100 });
    expect(extends_().map((call) => call.result)).toEqual([1700, 2400]);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(100);
    expect(ctx.signal.aborted).toBe(true);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
  });

  it('never: the lease is what the reservation gave; the signal fires at its deadline', async () => {
    const h = await open();
    const { consumer, ctx, extends_, settles } = await holding(h, { renew: 'never' });
    await h.advance(999, { step: 111 });
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(1);
    expect(ctx.signal.aborted).toBe(true);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    expect(extends_()).toEqual([]);
    expect(settles()).toEqual([]);
  });

  it('on-progress: a stuck handler (no progress) loses its lease', async () => {
    const h = await open();
    const { consumer, ctx, extends_ } = await holding(h, { renew: 'on-progress' });
    await h.advance(900, { step: 100 });
    expect(extends_()).toEqual([]);
    await h.advance(100);
    expect(ctx.signal.reason).toMatchObject({ reason: 'expired' });
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
  });

  it('on-progress: renews once per progress report, even one made after the renewal was due', async () => {
    const h = await open();
    const { consumer, gate, ctx, extends_, deadline } = await holding(h, { renew: 'on-progress' });
    ctx.progress({ step: 1 });
    await h.advance(700);
    expect(await deadline()).toBe(1700);
    await h.advance(700);
    expect(extends_()).toHaveLength(1);
    ctx.progress({ step: 2 });
    await h.flush();
    expect(await deadline()).toBe(2400);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked' });
    expect(consumer.worker.metrics().renewals).toBe(2);
  });

  it('a renewal that finds the queue deleted fires the signal at once (queue-deleted), not at the deadline', async () => {
    const h = await open();
    const { consumer, gate, ctx } = await holding(h);
    await h.broker.deleteQueue(h.queue.name);
    await h.advance(700);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'queue-deleted' });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'queue-deleted',
    });
    // Not an outage: no renewal error reported, none retried.
    expect(consumer.worker.metrics().renewalErrors).toBe(0);
    gate.open();
  });

  it('a settlement that finds the queue deleted ends the job as queue-deleted, not as a failed settlement', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(
      async (job: { id: string }, ctx) => {
        await gate.pass(ctx.signal);
        if (job.id === 'thrown') throw new Error('failed');
      },
      { concurrency: 2 },
    );
    await h.queue.publishBatch([{ id: 'acked' }, { id: 'thrown' }]);
    expect(await consumer.worker.runOnce()).toBe(2);
    await gate.arrivedAt(2);
    await h.broker.deleteQueue(h.queue.name);
    // Before any renewal: one handler returns (an ack), the other throws (a nack), on a queue gone.
    gate.open();
    const outcomes = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(outcomes.map(({ id, outcome, reason }) => ({ id, outcome, reason }))).toEqual(
      expect.arrayContaining([
        { id: 'acked', outcome: 'lease-lost', reason: 'queue-deleted' },
        { id: 'thrown', outcome: 'lease-lost', reason: 'queue-deleted' },
      ]),
    );
    // Not an outage: no settlement error reported.
    expect(consumer.worker.metrics()).toMatchObject({ settleErrors: 0, leasesLost: 2 });
  });

  it('a refused renewal fires the signal and the job is not acked though its handler returns', async () => {
    const h = await open();
    const { consumer, gate, ctx, settles } = await holding(h);
    consumer.faults.failRenewals({ mode: 'refused' });
    await h.advance(700);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'renewal-refused' });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'renewal-refused',
    });
    expect(consumer.worker.metrics()).toMatchObject({ leasesLost: 1, inHand: 0 });
    gate.open();
    await h.flush();
    expect(settles()).toEqual([]);
    expect(consumer.outcomes).toHaveLength(1);
  });

  it('a handler that ignores its signal is counted as abandoned until it returns', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(async () => {
      await gate.pass();
    });
    await h.queue.publish({ id: 'a' });
    await consumer.worker.runOnce();
    consumer.faults.failRenewals();
    await h.advance(700);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
    expect(consumer.worker.metrics().abandonedHandlers).toBe(1);
    gate.open();
    await h.flush();
    expect(consumer.worker.metrics().abandonedHandlers).toBe(0);
    expect(consumer.faults.calls.filter((call) => call.op === 'ack')).toEqual([]);
  });

  it('a renewal that throws is retried before the deadline and counted', async () => {
    const h = await open();
    const errors: string[] = [];
    const { consumer, gate, ctx, deadline } = await holding(h);
    consumer.worker.on('error', (_error, during) => errors.push(during));
    consumer.faults.failRenewals({ mode: 'error', count: 1 });
    await h.advance(700);
    expect(await deadline()).toBe(1000);
    expect(consumer.worker.metrics().renewalErrors).toBe(1);
    expect(errors).toEqual(['renew']);
    await h.advance(150);
    expect(await deadline()).toBe(1850);
    expect(ctx.signal.aborted).toBe(false);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked' });
  });

  it('renewals that keep throwing end in a lost lease at the deadline', async () => {
    const h = await open();
    const { consumer, ctx } = await holding(h);
    consumer.faults.failRenewals({ mode: 'error' });
    await h.advance(1000, { step: 50 });
    expect(ctx.signal.reason).toMatchObject({ reason: 'expired' });
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
    expect(consumer.worker.metrics().renewalErrors).toBeGreaterThan(1);
  });

  it('a renewal that never answers (a half-open connection) does not hold the lease past its deadline', async () => {
    const h = await open();
    const { consumer, ctx, settles } = await holding(h);
    consumer.faults.failRenewals({ mode: 'hang' });
    await h.advance(700);
    expect(consumer.faults.calls.filter((call) => call.fate === 'hung')).toHaveLength(1);
    await h.advance(299);
    expect(ctx.signal.aborted).toBe(false);
    await h.advance(1);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired', token: 1 });
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    // The answer comes late: the lease stays lost, nothing is acked.
    consumer.faults.heal();
    await h.advance(100);
    expect(settles()).toEqual([]);
    expect(consumer.worker.metrics()).toMatchObject({ leasesLost: 1, inHand: 0 });
  });

  it('a renewal the queue granted, whose answer is read only after the deadline’s wake-up (a blocked event loop), keeps the lease', async () => {
    const h = await open();
    const { consumer, gate, ctx, deadline } = await holding(h);
    consumer.faults.failRenewals({ mode: 'late', count: 1 });
    await h.advance(700);
    expect(await deadline()).toBe(1700);
    // The answer came in while the loop was blocked past 1000: the timer runs, then it is read.
    setImmediate(() => consumer.faults.heal());
    h.clock.set(1000);
    consumer.follow(1000);
    await h.flush();
    expect(ctx.signal.aborted).toBe(false);
    expect(ctx.deadline).toBe(1700);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked', token: 1 });
  });

  it('ctx.extend that never answers does not hold the lease past its deadline either', async () => {
    const h = await open();
    const { consumer, ctx } = await holding(h, { renew: 'never' });
    consumer.faults.failRenewals({ mode: 'hang' });
    const extended = ctx.extend(5000);
    await h.advance(1000);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired' });
    consumer.faults.heal();
    await expect(extended).rejects.toBeInstanceOf(LeaseLostError);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
  });

  it('ctx.extend(ms) extends from now and moves the next automatic renewal, which moves that deadline later', async () => {
    const h = await open();
    const { consumer, gate, ctx, extends_, deadline } = await holding(h);
    await h.advance(100);
    expect(await ctx.extend(5000)).toBe(5100);
    expect(await deadline()).toBe(5100);
    // Due when a third of the worker's 1000 ms lease is left (4766), not of the 5000 ms one.
    await h.advance(4600, { step: 100 });
    expect(extends_()).toHaveLength(1);
    await h.advance(100);
    expect(extends_().map((call) => call.result)).toEqual([5100, 5800]);
    expect(await ctx.extend()).toBe(5800);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked' });
    expect(consumer.worker.metrics().renewals).toBe(3);
  });

  it('ctx.extend rejects a bad visibility and throws LeaseLostError once the lease is gone', async () => {
    const h = await open();
    const { consumer, ctx } = await holding(h, { renew: 'never' });
    await expect(ctx.extend(0)).rejects.toBeInstanceOf(ValidationError);
    consumer.faults.failRenewals();
    await expect(ctx.extend(100)).rejects.toMatchObject({
      code: 'LEASE_LOST',
      reason: 'renewal-refused',
    });
    expect(ctx.signal.aborted).toBe(true);
    await expect(ctx.extend(100)).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('renewOnce() renews what is due without waiting for the timers', async () => {
    const h = await open();
    const { consumer, extends_, deadline } = await holding(h);
    expect(await consumer.worker.renewOnce()).toBe(0);
    consumer.pause();
    await h.advance(700);
    expect(extends_()).toEqual([]);
    consumer.clock.set(700);
    expect(await consumer.worker.renewOnce()).toBe(1);
    await h.flush();
    expect(extends_()).toHaveLength(1);
    expect(await deadline()).toBe(1700);
  });

  it('a visibility changed by updateQueue reaches the reservations made once VISIBILITY_READ_EVERY_MS passed, and their renewals ask for it', async () => {
    const h = await open();
    const gate = new Gate();
    const started: { id: string; deadline: number }[] = [];
    const consumer = h.process(async (job, ctx) => {
      started.push({ id: job.id, deadline: ctx.deadline });
      if (job.id === 'c') await gate.pass(ctx.signal);
    });
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
    await h.broker.updateQueue(h.queue.name, { visibility: 5000 });
    // Read at start: a reservation before the interval passed still asks for 1000 ms.
    await h.advance(VISIBILITY_READ_EVERY_MS - 1);
    await h.queue.publish({ id: 'b' });
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'b', outcome: 'acked' });
    await h.advance(1);
    const now = VISIBILITY_READ_EVERY_MS;
    await h.queue.publish({ id: 'c' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await gate.arrivedAt(1);
    expect(started).toEqual([
      { id: 'a', deadline: 1000 },
      { id: 'b', deadline: now - 1 + 1000 },
      { id: 'c', deadline: now + 5000 },
    ]);
    expect((await h.queue.inspect()).active).toMatchObject([{ id: 'c', deadline: now + 5000 }]);
    // Renewed at two thirds of its own lease, for that lease again.
    await h.advance(3300, { step: 100 });
    const extended = () => consumer.faults.calls.filter((call) => call.op === 'extend');
    expect(extended()).toEqual([]);
    await h.advance(100);
    expect(extended().map((call) => call.result)).toEqual([now + 3400 + 5000]);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'c', outcome: 'acked' });
  });

  it('when the queue cannot be read again, reservations keep the visibility read last and the worker reports a fetch error', async () => {
    const h = await open();
    const errors: [unknown, string][] = [];
    const deadlines: number[] = [];
    const consumer = h.process(async (_job, ctx) => {
      deadlines.push(ctx.deadline);
    });
    consumer.worker.on('error', (error, during) => errors.push([error, during]));
    const reserveOne = async (id: string) => {
      await h.queue.publish({ id });
      expect(await consumer.worker.runOnce()).toBe(1);
      expect(await consumer.nextOutcome()).toMatchObject({ id, outcome: 'acked' });
    };
    await reserveOne('a');
    await h.broker.updateQueue(h.queue.name, { visibility: 5000 });
    const reads = vi
      .spyOn(consumer.faults, 'options')
      .mockRejectedValue(new Error('options unreadable'));
    await h.advance(VISIBILITY_READ_EVERY_MS);
    await reserveOne('b');
    expect(reads).toHaveBeenCalledTimes(1);
    expect(errors).toEqual([[expect.objectContaining({ message: 'options unreadable' }), 'fetch']]);
    // Not read again at once: a storage that fails is asked once per interval.
    reads.mockRestore();
    await reserveOne('c');
    await h.advance(VISIBILITY_READ_EVERY_MS);
    await reserveOne('d');
    const now = VISIBILITY_READ_EVERY_MS;
    expect(deadlines).toEqual([1000, now + 1000, now + 1000, 2 * now + 5000]);
    expect(errors).toHaveLength(1);
  });

  it("a worker with its own visibility keeps asking for it when the queue's changes", async () => {
    const h = await open();
    const deadlines: number[] = [];
    const consumer = h.process(
      async (_job, ctx) => {
        deadlines.push(ctx.deadline);
      },
      { visibility: 2000 },
    );
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await consumer.nextOutcome();
    await h.broker.updateQueue(h.queue.name, { visibility: 5000 });
    await h.advance(VISIBILITY_READ_EVERY_MS);
    await h.queue.publish({ id: 'b' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await consumer.nextOutcome();
    expect(deadlines).toEqual([2000, VISIBILITY_READ_EVERY_MS + 2000]);
  });

  it('R10 a maxLease lowered while a worker with its own visibility runs: the handler signal fires when the shorter lease ends', async () => {
    const h = await open();
    const gate = new Gate();
    const contexts: JobContext[] = [];
    const consumer = h.process(
      async (job, ctx) => {
        contexts.push(ctx);
        if (job.id === 'b') await gate.pass(ctx.signal);
      },
      { visibility: 1000 },
    );
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
    await h.broker.updateQueue(h.queue.name, { maxLease: 300 });
    await h.advance(VISIBILITY_READ_EVERY_MS);
    await h.queue.publish({ id: 'b' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await gate.arrivedAt(1);
    const now = VISIBILITY_READ_EVERY_MS;
    expect((await h.queue.inspect()).active).toMatchObject([{ id: 'b', deadline: now + 300 }]);
    const ctx = contexts[1] as JobContext;
    await h.advance(299);
    expect(ctx.signal.aborted).toBe(false);
    // The queue hands the job out again from here on: its holder must know by then.
    await h.advance(1);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toMatchObject({ code: 'LEASE_LOST', reason: 'expired' });
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'b',
      outcome: 'lease-lost',
      reason: 'expired',
    });
  });
});

describe('a lease the handler extended, on the memory engine', () => {
  /**
   * The handler extends its 1000 ms lease to 5000 ms at once, then works 4600 ms; the queue's
   * deadline is read after every 50 ms of time.
   */
  async function extendedThenWorking(options: WorkerOptions) {
    const h = await Harness.open({ queueOptions: QUEUE });
    const consumer = h.process(async (_job, ctx) => {
      await ctx.extend(5000);
      await consumer.clock.sleep(4600, ctx.signal);
    }, options);
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    const deadlines: number[] = [];
    for (let time = 0; time < 4600; time += 50) {
      await h.advance(50);
      const deadline = (await h.queue.inspect()).active[0]?.deadline;
      if (deadline !== undefined) deadlines.push(deadline);
    }
    const outcome = await consumer.nextOutcome();
    const extended = consumer.faults.calls
      .filter((call) => call.op === 'extend')
      .map((call) => call.result);
    await h.close();
    return { outcome, deadlines, extended };
  }

  it.each([0, 1, Number.POSITIVE_INFINITY])(
    'maxRenewals %s: no renewal brings the deadline earlier, the job is acked',
    async (maxRenewals) => {
      const { outcome, deadlines, extended } = await extendedThenWorking({ maxRenewals });
      expect(outcome).toMatchObject({ outcome: 'acked' });
      expect(extended[0]).toBe(5000);
      expect(extended.every((deadline) => Number(deadline) >= 5000)).toBe(true);
      expect(deadlines[0]).toBe(5000);
      expect(deadlines).toEqual([...deadlines].sort((a, b) => a - b));
    },
  );
});
