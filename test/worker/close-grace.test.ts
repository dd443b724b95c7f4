import { afterEach, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { Gate } from '../../src/testing/index.js';
import {
  type JobContext,
  LeaseLostError,
  type OutcomeRecord,
  silentLogger,
  work,
} from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/**
 * docs/worker.md, Shutdown: a close lets the jobs in hand finish for up to its timeout,
 * keeping their leases meanwhile. What keeps them goes on until the jobs are given back.
 */
describeEngines(engines, 'the grace period of a close', (openHarness) => {
  it('keeps heartbeating the session: a job that finishes within the timeout is acked', async () => {
    const h = await openHarness();
    const gate = new Gate();
    const contexts: JobContext[] = [];
    const consumer = h.process(
      async (_job, ctx) => {
        contexts.push(ctx);
        await gate.pass(ctx.signal);
      },
      { session: { timeout: 1000 }, visibility: 60_000 },
    );
    await h.queue.publish({ id: 'a' });
    await consumer.worker.start();
    await gate.arrivedAt(1);
    let closed = false;
    const closing = consumer.worker.close({ timeout: 10_000 }).then(() => {
      closed = true;
    });
    // Three times the session's timeout: its heartbeats must go on.
    await h.advance(3000, { step: 100 });
    expect(closed).toBe(false);
    expect(contexts[0]?.signal.aborted).toBe(false);
    expect(await h.queue.stats()).toMatchObject({ sessions: 1, active: 1, sessionReleases: 0 });
    gate.open();
    await closing;
    expect(consumer.outcomes).toMatchObject([{ id: 'a', token: 1, outcome: 'acked' }]);
    expect(await h.queue.stats()).toMatchObject({ acks: 1, ready: 0, sessions: 0 });
  });
});

describe('the grace period of a close, in-process', () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  for (const url of ['memory:', 'sqlite::memory:']) {
    it(`R28 ${url} a job cancelled while the worker closes stops its handler at once`, async () => {
      const broker = await open(url);
      closing.push(() => broker.close());
      const queue = await broker.queue('long', { visibility: 60_000 });
      const started = new Gate();
      const outcomes: OutcomeRecord[] = [];
      let seen: AbortSignal | undefined;
      const worker = await work(
        queue,
        async (_job, ctx) => {
          seen = ctx.signal;
          await started.pass(ctx.signal);
        },
        { logger: silentLogger },
      );
      worker.on('outcome', (record) => outcomes.push(record));
      closing.push(() => worker.close({ timeout: 0 }));
      await queue.publish({ id: 'report' });
      await started.arrivedAt(1);
      const closeStarted = Date.now();
      const closed = worker.close({ timeout: 8000 });
      expect(await queue.cancel('report')).toBe(true);
      await closed;
      expect(Date.now() - closeStarted).toBeLessThan(4000);
      expect(seen?.reason).toBeInstanceOf(LeaseLostError);
      expect(seen?.reason).toMatchObject({ reason: 'cancelled', id: 'report' });
      expect(outcomes).toMatchObject([
        { id: 'report', outcome: 'lease-lost', reason: 'cancelled' },
      ]);
      expect(await queue.job('report')).toMatchObject({ state: 'dead', reason: 'cancelled' });
    });
  }
});
