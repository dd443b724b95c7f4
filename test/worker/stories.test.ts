/**
 * The classic failure stories of a lease queue, replayed deterministically with the
 * leaseq/testing harness: a manual clock, simulated consumer processes and injected faults.
 */
import { expect, it } from 'vitest';
import { FencedResource, Gate, MemoryInbox } from '../../src/testing/index.js';
import { inboxHandler } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/** An account that is debited by jobs `{ amount }`. */
function account(balance: number) {
  return {
    balance,
    debits: 0,
    debit(amount: number) {
      this.balance -= amount;
      this.debits += 1;
    },
  };
}

describeEngines(engines, 'failure stories', (open) => {
  it('debit committed, then the ack is lost: the job comes back and the inbox absorbs it', async () => {
    const h = await open();
    const wallet = account(100);
    const inbox = new MemoryInbox();
    const consumer = h.process<{ amount: number }>(
      inboxHandler(inbox, 'billing', (_tx, ctx) => wallet.debit(ctx.payload.amount)),
    );
    await h.queue.publish({ id: 'order-7', payload: { amount: 30 } });
    consumer.faults.loseNextAck();
    await consumer.worker.start();

    // The debit committed, but the ack never reached the queue.
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'order-7',
      token: 1,
      outcome: 'lease-lost',
      reason: 'settle-failed',
    });
    expect(wallet.balance).toBe(70);
    expect((await h.queue.inspect()).active).toMatchObject([{ id: 'order-7', token: 1 }]);

    // The lease runs out; the job is delivered again and the inbox says: already done.
    await h.advance(1000);
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'order-7',
      token: 2,
      deliveryCount: 2,
      outcome: 'duplicate',
    });
    expect(wallet).toMatchObject({ balance: 70, debits: 1 });
    expect(await h.queue.job('order-7')).toBeUndefined();
    expect(consumer.worker.metrics()).toMatchObject({
      settleErrors: 1,
      outcomes: { duplicate: 1, acked: 0 },
    });
  });

  it('the ack is applied but its answer is lost: no redelivery, nothing done twice', async () => {
    const h = await open();
    const wallet = account(100);
    const consumer = h.process<{ amount: number }>((job) => wallet.debit(job.payload.amount));
    await h.queue.publish({ id: 'order-8', payload: { amount: 5 } });
    consumer.faults.loseNextAck({ applied: true });
    await consumer.worker.runOnce();
    expect(await consumer.nextOutcome()).toMatchObject({ reason: 'settle-failed' });
    await h.advance(5000);
    expect(await h.queue.job('order-8')).toBeUndefined();
    expect(wallet.debits).toBe(1);
  });

  it('the process crashes before its ack: another process gets the job after the lease', async () => {
    const h = await open();
    const wallet = account(100);
    const inbox = new MemoryInbox();
    const handler = inboxHandler<{ amount: number }>(inbox, 'billing', (_tx, ctx) =>
      wallet.debit(ctx.payload.amount),
    );
    const first = h.process(handler);
    await h.queue.publish({ id: 'order-9', payload: { amount: 10 } });
    first.faults.crashBeforeAck();
    await first.worker.runOnce();
    await h.flush();
    expect(first.faults.crashed).toBe(true);
    expect(wallet.balance).toBe(90);

    // Nobody settles the delivery; until its deadline nobody else may take the job.
    const second = h.process(handler);
    expect(await second.worker.runOnce()).toBe(0);
    await h.advance(999);
    expect(await second.worker.runOnce()).toBe(0);
    await h.advance(1);
    expect(await second.worker.runOnce()).toBe(1);
    expect(await second.nextOutcome()).toMatchObject({
      id: 'order-9',
      deliveryCount: 2,
      outcome: 'duplicate',
    });
    expect(wallet).toMatchObject({ balance: 90, debits: 1 });
  });

  it('slow consumer past expiry: its late ack is refused and the fence rejects its late write (R7, R8)', async () => {
    const h = await open();
    const report = new FencedResource<string>();
    const slowGate = new Gate();
    const slow = h.process(async (_job, ctx) => {
      await slowGate.pass();
      report.write(ctx.token, 'written by the slow consumer');
    });
    const fast = h.process(async (_job, ctx) => {
      report.write(ctx.token, 'written by the second consumer');
    });
    await h.queue.publish({ id: 'report-1' });
    await slow.worker.runOnce();
    await slowGate.arrivedAt(1);

    // A long GC pause: the slow process's timers stop, so it neither renews nor notices.
    slow.pause();
    await h.advance(1000);
    expect(await fast.worker.runOnce()).toBe(1);
    expect(await fast.nextOutcome()).toMatchObject({ token: 2, outcome: 'acked' });

    // The slow process wakes up and finishes as if nothing happened.
    slowGate.open();
    expect(await slow.nextOutcome()).toMatchObject({
      id: 'report-1',
      token: 1,
      outcome: 'lease-lost',
      reason: 'stale-ack',
    });
    slow.resume();
    expect(slow.faults.calls.find((call) => call.op === 'ack')).toMatchObject({ result: false });
    expect(report.writes).toEqual([
      { token: 2, value: 'written by the second consumer', accepted: true },
      { token: 1, value: 'written by the slow consumer', accepted: false },
    ]);
    expect(report.value).toBe('written by the second consumer');
    expect(slow.worker.metrics()).toMatchObject({ staleAcks: 1, leasesLost: 1 });
    expect((await h.queue.stats()).staleAcks).toBe(1);
  });

  it('handler slower than its lease with renewals off: the signal stops it before its write', async () => {
    const h = await open();
    const report = new FencedResource<string>();
    const gate = new Gate();
    const cautious = h.process(
      async (_job, ctx) => {
        await gate.pass(ctx.signal);
        report.write(ctx.token, 'late');
      },
      { renew: 'never' },
    );
    await h.queue.publish({ id: 'report-2' });
    await cautious.worker.runOnce();
    await h.advance(1000);
    expect(await cautious.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    gate.open();
    await h.flush();
    expect(report.writes).toEqual([]);
    expect(cautious.faults.calls.filter((call) => call.op === 'ack')).toEqual([]);
    expect(await h.queue.receive()).toMatchObject([{ id: 'report-2', deliveryCount: 2 }]);
  });

  it('a renewal fails: the handler is told at once, the job is not acked, it is redelivered', async () => {
    const h = await open();
    const gate = new Gate();
    let aborted: unknown;
    const consumer = h.process(async (_job, ctx) => {
      ctx.signal.addEventListener('abort', () => {
        aborted = ctx.signal.reason;
      });
      await gate.pass();
    });
    await h.queue.publish({ id: 'sync-3' });
    await consumer.worker.runOnce();
    consumer.faults.failRenewals({ mode: 'refused', count: 1 });
    await h.advance(700);
    expect(aborted).toMatchObject({ code: 'LEASE_LOST', reason: 'renewal-refused', id: 'sync-3' });
    gate.open();
    await h.flush();
    expect(consumer.faults.calls.filter((call) => call.op === 'ack')).toEqual([]);
    await h.advance(300);
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
    expect(await consumer.nextOutcome()).toMatchObject({ deliveryCount: 2, outcome: 'acked' });
  });

  it('the session is closed under the consumer: its jobs return at once, its late ack is refused', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(() => gate.pass(), { session: {} });
    await h.queue.publish({ id: 'mail-4' });
    await consumer.worker.runOnce();
    await gate.arrivedAt(1);
    await consumer.faults.endSessions();
    // Back in ready at once, not after the lease (R16).
    expect((await h.queue.inspect()).ready).toEqual(['mail-4']);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'stale-ack',
    });
  });
});
