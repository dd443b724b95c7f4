import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { Gate, type Harness } from '../../src/testing/index.js';
import {
  type JobContext,
  LeaseLostError,
  Worker,
  WorkerClosingError,
} from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';
import { recordingLogger } from './log-lines.js';

const engines = await workerEngines();

/** What the worker asked of the queue beyond receiving: nothing, in this mode. */
function settles(h: { faults: { calls: { op: string }[] } }) {
  return h.faults.calls.filter((call) => call.op !== 'receive').map((call) => call.op);
}

/** A process over `h` whose handler waits at a gate, with `ack: 'auto'`. */
function gated(h: Harness, options: { concurrency?: number } = {}) {
  const gate = new Gate();
  const contexts: JobContext[] = [];
  const consumer = h.process(
    async (_job, ctx) => {
      contexts.push(ctx);
      await gate.pass(ctx.signal);
    },
    { ack: 'auto', ...options },
  );
  return { gate, contexts, consumer };
}

describeEngines(engines, "R22 the worker's ack: 'auto' (at most once)", (open) => {
  it('R22 the job leaves the queue as it is received; the handler runs with no lease; nothing is acked or nacked', async () => {
    const h = await open();
    const { gate, contexts, consumer } = gated(h);
    await h.queue.publish({ id: 'a', payload: { n: 1 } });
    expect(await consumer.worker.runOnce()).toBe(1);
    await gate.arrivedAt(1);
    // Received at most once: already gone from the queue while the handler runs.
    expect(await h.queue.stats()).toMatchObject({ ready: 0, active: 0, autoAcked: 1 });
    expect(contexts[0]?.deadline).toBe(0);
    // Time far past any lease: no renewal is tried, no lease is lost.
    await h.advance(5000);
    expect(contexts[0]?.signal.aborted).toBe(false);
    await expect(contexts[0]?.extend()).rejects.toMatchObject({
      code: 'LEASE_LOST',
      reason: 'auto-ack',
    });
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
    expect(settles(consumer)).toEqual([]);
    expect(await h.queue.stats()).toMatchObject({
      acks: 0,
      nacks: 0,
      staleAcks: 0,
      staleNacks: 0,
      extensions: 0,
      staleExtends: 0,
      autoAcked: 1,
    });
    expect(consumer.worker.metrics()).toMatchObject({
      received: 1,
      inHand: 0,
      renewals: 0,
      outcomes: { acked: 1, lost: 0 },
    });
  });

  it('R22 a handler that throws: the job is lost, reported as an error, and never retried', async () => {
    const logger = recordingLogger();
    const h = await open({ logger });
    const consumer = h.process(
      async () => {
        throw new Error('boom');
      },
      { ack: 'auto' },
    );
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'a',
      outcome: 'lost',
      reason: 'handler-error',
      error: 'boom',
    });
    expect(logger.lines).toContainEqual({
      level: 'error',
      message: 'job lost',
      fields: expect.objectContaining({ id: 'a', outcome: 'lost', error: 'boom' }),
    });
    expect(consumer.worker.metrics()).toMatchObject({
      outcomes: { lost: 1 },
      retries: 0,
      lastError: { id: 'a', message: 'boom' },
    });
    expect(settles(consumer)).toEqual([]);
    // Nothing comes back: no retry, no dead letter, no redelivery after any lease or backoff.
    await h.advance(120_000);
    expect(await consumer.worker.runOnce()).toBe(0);
    expect(await h.queue.stats()).toMatchObject({ ready: 0, delayed: 0, dead: 0, nacks: 0 });
    expect(await h.queue.job('a')).toBeUndefined();
  });

  it('R22 a handler that throws DuplicateError or calls ctx.duplicate() counts as duplicate', async () => {
    const h = await open();
    const consumer = h.process(
      (_job, ctx) => {
        ctx.duplicate();
      },
      { ack: 'auto' },
    );
    await h.queue.publish({ id: 'a' });
    await consumer.worker.runOnce();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'duplicate' });
  });

  it('R22 concurrency still bounds the jobs in hand: no more are received than there are slots', async () => {
    const h = await open();
    const { gate, consumer } = gated(h, { concurrency: 2 });
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
    expect(await consumer.worker.runOnce()).toBe(2);
    expect(await consumer.worker.runOnce()).toBe(0);
    expect(await h.queue.stats()).toMatchObject({ ready: 2, autoAcked: 2 });
    gate.open();
    await consumer.nextOutcome();
    await consumer.nextOutcome();
    expect(await consumer.worker.runOnce()).toBe(2);
    expect(await h.queue.stats()).toMatchObject({ ready: 0, autoAcked: 4 });
  });

  it('R22 close: a job whose handler outlives the timeout cannot go back; it is lost and its signal fires', async () => {
    const h = await open();
    const { gate, contexts, consumer } = gated(h);
    await h.queue.publish({ id: 'a' });
    await consumer.worker.runOnce();
    await gate.arrivedAt(1);
    await consumer.worker.close({ timeout: 0 });
    expect(contexts[0]?.signal.aborted).toBe(true);
    expect(contexts[0]?.signal.reason).toBeInstanceOf(WorkerClosingError);
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'a',
      outcome: 'lost',
      reason: 'shutdown',
    });
    expect(settles(consumer)).toEqual([]);
    expect(await h.queue.stats()).toMatchObject({ ready: 0, active: 0, nacks: 0 });
  });

  it('R22 started, the worker takes each job as it is published and runs it once', async () => {
    const h = await open();
    const seen: string[] = [];
    const consumer = h.process(
      (job) => {
        seen.push(job.id);
      },
      { ack: 'auto', concurrency: 4, wait: 1000 },
    );
    await consumer.worker.start();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    // The remote clients poll an at-most-once wait on their own time; the harness's clock
    // drives the in-process ones.
    for (let step = 0; step < 50 && seen.length < 3; step++) {
      await h.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(seen.sort()).toEqual(['a', 'b', 'c']);
    await consumer.worker.close();
    expect(await h.queue.stats()).toMatchObject({ ready: 0, autoAcked: 3, acks: 0 });
  });
});

describe("the worker's ack option", () => {
  it("is 'manual' or 'auto'; anything else is a ValidationError naming it", async () => {
    const h = { receive: async () => [] } as never;
    expect(() => new Worker(h, () => {}, { ack: 'sometimes' as 'auto' })).toThrow(ValidationError);
    expect(() => new Worker(h, () => {}, { ack: 'sometimes' as 'auto' })).toThrow(
      /ack must be 'manual' or 'auto'/,
    );
    expect(new LeaseLostError('auto-ack', 'a', 1).message).toContain('auto-ack');
  });
});
