import { describe, expect, it } from 'vitest';
import { open, silentLogger } from '../../src/index.js';
import {
  type JobContext,
  LeaseLostError,
  type OutcomeRecord,
  Worker,
} from '../../src/worker/index.js';
import { postgresReachable, postgresUrl, queueName } from '../conformance/engines.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'a ctx.extend() still on its way as the handler ends', (open) => {
  it('resolves with the deadline the queue granted; the ack goes once it was answered', async () => {
    const h = await open();
    let extension: Promise<number> | undefined;
    const consumer = h.process((_job, ctx) => {
      extension = ctx.extend(3000);
    });
    // The queue gets the extension at once; its answer waits.
    consumer.faults.failRenewals({ mode: 'late', count: 1 });
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await h.flush();
    expect(consumer.faults.calls.map((call) => call.op)).toEqual(['receive', 'extend']);
    expect(consumer.outcomes).toEqual([]);
    consumer.faults.heal();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
    await expect(extension).resolves.toBe(3000);
    expect(consumer.faults.calls.map((call) => call.op)).toEqual(['receive', 'extend', 'ack']);
    expect(consumer.worker.metrics()).toMatchObject({ leasesLost: 0, staleAcks: 0, inHand: 0 });
  });

  it('resolves as well when the handler throws; the retry goes once it was answered', async () => {
    const h = await open();
    let extension: Promise<number> | undefined;
    const consumer = h.process((_job, ctx) => {
      extension = ctx.extend(3000);
      throw new Error('try again');
    });
    consumer.faults.failRenewals({ mode: 'late', count: 1 });
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await h.flush();
    expect(consumer.outcomes).toEqual([]);
    consumer.faults.heal();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'retried' });
    await expect(extension).resolves.toBe(3000);
    expect(consumer.faults.calls.map((call) => call.op)).toEqual(['receive', 'extend', 'nack']);
  });

  it('an extension with no answer holds the ack until the lease deadline, no longer', async () => {
    const h = await open();
    let extension: Promise<number> | undefined;
    const consumer = h.process((_job, ctx) => {
      extension = ctx.extend(3000);
      extension.catch(() => undefined);
    });
    // Not even sent until healed: a half-open connection.
    consumer.faults.failRenewals({ mode: 'hang', count: 1 });
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await h.advance(999);
    expect(consumer.outcomes).toEqual([]);
    await h.advance(1);
    // The lease ended unextended: the ack is refused, and nothing waits any more.
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'stale-ack',
    });
    expect(consumer.worker.metrics().inHand).toBe(0);
    consumer.faults.heal();
    await expect(extension).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('a close past its grace period does not wait for an unanswered extension: the job is acked', async () => {
    const h = await open();
    let extension: Promise<number> | undefined;
    // A lease longer than the close's wait for the jobs it gives back.
    const consumer = h.process(
      (_job, ctx) => {
        extension = ctx.extend(3000);
        extension.catch(() => undefined);
      },
      { visibility: 5000 },
    );
    consumer.faults.failRenewals({ mode: 'hang', count: 1 });
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await h.flush();
    expect(consumer.outcomes).toEqual([]);
    const closing = consumer.worker.close({ timeout: 0 });
    await h.advance(1000, { step: 100 });
    await closing;
    // Settled as it ended, not left in hand once the worker stopped keeping its lease.
    expect(consumer.outcomes).toMatchObject([{ id: 'a', outcome: 'acked' }]);
    expect(consumer.faults.calls.map((call) => call.op)).toEqual(['receive', 'extend', 'ack']);
    expect(consumer.worker.metrics().inHand).toBe(0);
    await h.advance(5000, { step: 1000 });
    expect(await h.queue.stats()).toMatchObject({ acks: 1, ready: 0, active: 0, expiries: 0 });
  });
});

const reachable = await postgresReachable();

describe.skipIf(!reachable)(
  'a ctx.extend() on its way as the handler ends, over PostgreSQL',
  () => {
    it('resolves with the deadline granted, and the job is acked', async () => {
      const broker = await open(postgresUrl());
      const queue = await broker.queue(queueName('extend-in-flight'), { visibility: 10_000 });
      await queue.publish({ id: 'a' });
      const extensions: Promise<number>[] = [];
      const worker = new Worker(
        queue,
        (_job, ctx: JobContext) => {
          extensions.push(ctx.extend(20_000));
        },
        { logger: silentLogger },
      );
      const outcomes: OutcomeRecord[] = [];
      const settled = new Promise<void>((resolve) =>
        worker.on('outcome', (record) => {
          outcomes.push(record);
          resolve();
        }),
      );
      try {
        expect(await worker.runOnce()).toBe(1);
        await settled;
        expect(outcomes).toMatchObject([{ id: 'a', outcome: 'acked' }]);
        const [extension] = await Promise.allSettled(extensions);
        expect(extension).toMatchObject({ status: 'fulfilled' });
        expect(await queue.stats()).toMatchObject({ acks: 1, ready: 0, active: 0 });
      } finally {
        await worker.close({ timeout: 0 });
        await broker.deleteQueue(queue.name).catch(() => undefined);
        await broker.close();
      }
    });
  },
);
