import { expect, it, vi } from 'vitest';
import { backoffDelay } from '../../src/core/index.js';
import {
  AmbiguousError,
  DuplicateError,
  PermanentError,
  RetryableError,
} from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';
import { recordingLogger } from './log-lines.js';

const engines = await workerEngines();

/** The default backoff of a retry of job `id` at `attempt` (R15). */
const defaultDelay = (id: string, attempt: number) =>
  backoffDelay({ id, attempt, baseDelay: 1000, maxDelay: 60_000 });

describeEngines(engines, 'outcomes', (open) => {
  it('a handler that returns acks its job and logs the outcome with id and token (R17)', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a', payload: { n: 1 } });
    const logger = recordingLogger();
    const seen: unknown[] = [];
    const consumer = h.process(
      async (job, ctx) => {
        seen.push([job.id, job.payload, job.token, job.deliveryCount, job.redelivered, ctx.token]);
      },
      { logger },
    );
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.nextOutcome()).toMatchObject({
      queue: 'jobs',
      id: 'a',
      token: 1,
      deliveryCount: 1,
      outcome: 'acked',
    });
    expect(seen).toEqual([['a', { n: 1 }, 1, 1, false, 1]]);
    expect(await h.queue.job('a')).toBeUndefined();
    expect(logger.lines).toEqual([
      {
        level: 'info',
        message: 'job acked',
        fields: {
          queue: 'jobs',
          id: 'a',
          token: 1,
          deliveryCount: 1,
          outcome: 'acked',
          durationMs: 0,
        },
      },
    ]);
    const metrics = consumer.worker.metrics();
    expect(metrics.outcomes.acked).toBe(1);
    expect(metrics.received).toBe(1);
    expect(metrics.processingTime).toEqual({ count: 1, sum: 0, max: 0 });
    expect(metrics.inHand).toBe(0);
  });

  it('a handler may resolve with any value, as (job) => send(job) does: its job is acked', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const send = async (id: string) => ({ sent: id });
    const consumer = h.process((job) => (job.id === 'a' ? send(job.id) : 7), { concurrency: 2 });
    expect(await consumer.worker.runOnce()).toBe(2);
    const records = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(records.map((r) => [r.id, r.outcome]).sort()).toEqual([
      ['a', 'acked'],
      ['b', 'acked'],
    ]);
  });

  it('processing time runs from receipt to settlement on the worker clock', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const consumer = h.process(async () => {
      await consumer.clock.sleep(250);
    });
    await consumer.worker.runOnce();
    await h.advance(250);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked', durationMs: 250 });
    expect(consumer.worker.metrics().processingTime).toEqual({ count: 1, sum: 250, max: 250 });
  });

  it('an unknown error retries with the backoff of (id, deliveryCount) (R15)', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const logger = recordingLogger();
    const consumer = h.process(
      async () => {
        throw new Error('boom');
      },
      { logger },
    );
    await consumer.worker.runOnce();
    const delay = defaultDelay('a', 1);
    expect(delay).toBeGreaterThanOrEqual(500);
    expect(delay).toBeLessThanOrEqual(1000);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'retried',
      reason: 'retryable',
      error: 'boom',
      delay,
    });
    expect((await h.queue.inspect()).delayed).toEqual([{ id: 'a', availableAt: delay }]);
    expect(logger.lines[0]).toMatchObject({
      level: 'warn',
      fields: { id: 'a', token: 1, outcome: 'retried', error: 'boom', delay },
    });
    expect(consumer.worker.metrics()).toMatchObject({
      retries: 1,
      lastError: { id: 'a', token: 1, message: 'boom' },
    });
  });

  it('retries until maxDeliveries, then dead-letters with retries-exhausted and the last error', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const logger = recordingLogger();
    const consumer = h.process(
      async (job) => {
        throw new Error(`failure ${job.deliveryCount}`);
      },
      { logger },
    );
    await consumer.worker.start();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried', deliveryCount: 1 });
    await h.advance(defaultDelay('a', 1));
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried', deliveryCount: 2 });
    await h.advance(defaultDelay('a', 2));
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'dead',
      deliveryCount: 3,
      reason: 'retries-exhausted',
      error: 'failure 3',
    });
    const [dead] = await h.queue.deadLetters();
    expect(dead).toMatchObject({ id: 'a', reason: 'retries-exhausted', deliveryCount: 3 });
    // Each attempt keeps what its handler threw (R9, R14): why the job died is in the history.
    expect(dead?.history.map((attempt) => [attempt.outcome, attempt.error])).toEqual([
      ['requeued', 'failure 1'],
      ['requeued', 'failure 2'],
      ['rejected', 'failure 3'],
    ]);
    expect(logger.lines.at(-1)).toMatchObject({
      level: 'error',
      fields: {
        id: 'a',
        token: 3,
        outcome: 'dead',
        reason: 'retries-exhausted',
        error: 'failure 3',
      },
    });
    expect(consumer.worker.metrics()).toMatchObject({
      retries: 2,
      outcomes: { dead: 1, retried: 2 },
      deadLetters: { 'retries-exhausted': 1 },
      lastError: { id: 'a', token: 3, message: 'failure 3' },
    });
  });

  it('R13 a maxDeliveries raised while the worker runs is the one a failing job dies of', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const consumer = h.process(
      async (job) => {
        throw new Error(`failure ${job.deliveryCount}`);
      },
      { backoff: { baseDelay: 10, jitter: 0 } },
    );
    await consumer.worker.start();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried', deliveryCount: 1 });
    await h.advance(10);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried', deliveryCount: 2 });
    // Read as 3 at start; raised to 4 before the third failure.
    await h.broker.updateQueue('jobs', { maxDeliveries: 4 });
    await h.advance(20);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'retried',
      deliveryCount: 3,
      delay: 40,
    });
    await h.advance(40);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'dead',
      deliveryCount: 4,
      reason: 'retries-exhausted',
      error: 'failure 4',
    });
    expect(await h.queue.deadLetters()).toMatchObject([
      { id: 'a', reason: 'retries-exhausted', deliveryCount: 4 },
    ]);
  });

  it('R13 when the limit cannot be read again, a job at the limit read at start still dies of it', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const errors: unknown[] = [];
    const consumer = h.process(
      async () => {
        throw new Error('boom');
      },
      { backoff: { baseDelay: 10, jitter: 0 } },
    );
    consumer.worker.on('error', (error) => errors.push(error));
    await consumer.worker.start();
    await consumer.nextOutcome();
    await h.advance(10);
    await consumer.nextOutcome();
    const options = vi
      .spyOn(consumer.faults, 'options')
      .mockRejectedValue(new Error('options unreadable'));
    await h.advance(20);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'dead',
      deliveryCount: 3,
      reason: 'retries-exhausted',
    });
    expect(options).toHaveBeenCalledTimes(1);
    expect(errors).toEqual([expect.objectContaining({ message: 'options unreadable' })]);
  });

  it('with maxDeliveries Infinity a failing job is retried, never dead-lettered', async () => {
    const h = await open({
      queue: 'forever',
      queueOptions: { visibility: 1000, maxDeliveries: Infinity },
    });
    await h.queue.publish({ id: 'a' });
    const consumer = h.process(
      async () => {
        throw new Error('again');
      },
      { backoff: { baseDelay: 10, jitter: 0 } },
    );
    await consumer.worker.start();
    for (const delay of [10, 20, 40, 80, 160]) {
      expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried', delay });
      await h.advance(delay);
    }
    expect(await h.queue.deadLetters()).toEqual([]);
  });

  it('backoff options shape the delays: factor, cap and no jitter', async () => {
    const h = await open({ queueOptions: { visibility: 1000, maxDeliveries: 5 } });
    await h.queue.publish({ id: 'a' });
    const consumer = h.process(
      async () => {
        throw new Error('again');
      },
      { backoff: { baseDelay: 100, maxDelay: 250, factor: 3, jitter: 0 } },
    );
    await consumer.worker.start();
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const record = await consumer.nextOutcome();
      delays.push(record.delay ?? -1);
      await h.advance(record.delay ?? 0);
    }
    expect(delays).toEqual([100, 250, 250, 250]);
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'dead', deliveryCount: 5 });
  });

  it('a RetryableError may choose its own delay', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const consumer = h.process(async () => {
      throw new RetryableError('rate limited', { delay: 7000 });
    });
    await consumer.worker.runOnce();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried', delay: 7000 });
    expect((await h.queue.inspect()).delayed).toEqual([{ id: 'a', availableAt: 7000 }]);
  });

  it('a PermanentError dead-letters at once with its reason (default permanent)', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const consumer = h.process(
      async (job) => {
        if (job.id === 'a') throw new PermanentError('bad payload', { reason: 'invalid-payload' });
        throw new PermanentError('no such account');
      },
      { concurrency: 2 },
    );
    expect(await consumer.worker.runOnce()).toBe(2);
    const records = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(records.map((r) => [r.id, r.outcome, r.reason, r.error]).sort()).toEqual([
      ['a', 'dead', 'invalid-payload', 'bad payload'],
      ['b', 'dead', 'permanent', 'no such account'],
    ]);
    const dead = await h.queue.deadLetters();
    expect(dead.map((d) => [d.id, d.reason, d.deliveryCount]).sort()).toEqual([
      ['a', 'invalid-payload', 1],
      ['b', 'permanent', 1],
    ]);
    expect(dead.map((d) => [d.id, d.history[0]?.error]).sort()).toEqual([
      ['a', 'bad payload'],
      ['b', 'no such account'],
    ]);
    expect(consumer.worker.metrics().deadLetters).toEqual({ 'invalid-payload': 1, permanent: 1 });
  });

  it('a thrown message is kept in the history made storable: cut to 1024 characters, U+0000 and lone surrogates replaced', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'long' }, { id: 'odd' }, { id: 'empty' }]);
    const consumer = h.process(
      async (job) => {
        if (job.id === 'long') throw new Error(`${'x'.repeat(1022)}🙂 and more`);
        if (job.id === 'odd') throw new Error('nul \u0000 and \ud800 half');
        throw new Error('');
      },
      { concurrency: 3 },
    );
    expect(await consumer.worker.runOnce()).toBe(3);
    for (let n = 0; n < 3; n += 1) {
      expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'retried' });
    }
    const errorOf = async (id: string) => (await h.queue.job(id))?.history[0]?.error;
    // Never inside the surrogate pair: the cut falls before it, then the ellipsis.
    expect(await errorOf('long')).toBe(`${'x'.repeat(1022)}…`);
    expect(await errorOf('odd')).toBe('nul \ufffd and \ufffd half');
    expect((await h.queue.job('empty'))?.history[0]).toMatchObject({ outcome: 'requeued' });
    expect(await errorOf('empty')).toBeUndefined();
  });

  it('dead letters are counted by any reason, constructor and __proto__ too', async () => {
    const h = await open();
    const reasons = ['constructor', '__proto__', 'toString', 'schema'];
    await h.queue.publishBatch(reasons.map((reason) => ({ id: `job-${reason}`, payload: reason })));
    const consumer = h.process<string>(
      async (job) => {
        throw new PermanentError('refused', { reason: job.payload });
      },
      { concurrency: 4 },
    );
    expect(await consumer.worker.runOnce()).toBe(4);
    for (let i = 0; i < 4; i++) await consumer.nextOutcome();
    const { deadLetters } = consumer.worker.metrics();
    expect(Object.entries(deadLetters).sort()).toEqual(reasons.map((reason) => [reason, 1]).sort());
  });

  it('a PermanentError whose reason the queue would refuse still dead-letters at once', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    let runs = 0;
    const consumer = h.process(
      async (job) => {
        runs += 1;
        throw new PermanentError('upstream refused', {
          reason: job.id === 'a' ? '' : 'x'.repeat(2000),
        });
      },
      { concurrency: 2 },
    );
    expect(await consumer.worker.runOnce()).toBe(2);
    const records = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(records.map((r) => [r.id, r.outcome, r.reason]).sort()).toEqual([
      ['a', 'dead', 'permanent'],
      ['b', 'dead', 'permanent'],
    ]);
    expect(records[0]?.error).toMatch(/^upstream refused \(its reason was refused: /);
    const dead = await h.queue.deadLetters();
    expect(dead.map((d) => [d.id, d.reason, d.deliveryCount]).sort()).toEqual([
      ['a', 'permanent', 1],
      ['b', 'permanent', 1],
    ]);
    expect(runs).toBe(2);
    expect(consumer.worker.metrics().settleErrors).toBe(0);
  });

  it('ctx.duplicate() or a DuplicateError acks the job and counts a duplicate', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const consumer = h.process(
      async (job, ctx) => {
        if (job.id === 'a') ctx.duplicate();
        else throw new DuplicateError('already applied');
      },
      { concurrency: 2 },
    );
    await consumer.worker.runOnce();
    const records = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(records.map((r) => [r.id, r.outcome]).sort()).toEqual([
      ['a', 'duplicate'],
      ['b', 'duplicate'],
    ]);
    expect((await h.queue.stats()).acks).toBe(2);
    expect(consumer.worker.metrics().outcomes).toMatchObject({ duplicate: 2, acked: 0 });
  });

  it('an AmbiguousError dead-letters with reason ambiguous, never retried', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const logger = recordingLogger();
    const consumer = h.process(
      async () => {
        throw new AmbiguousError('payment API timed out after the request was sent');
      },
      { logger },
    );
    await consumer.worker.runOnce();
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'ambiguous',
      reason: 'ambiguous',
      deliveryCount: 1,
    });
    expect(await h.queue.deadLetters()).toMatchObject([{ id: 'a', reason: 'ambiguous' }]);
    expect(logger.lines[0]?.level).toBe('error');
    expect(consumer.worker.metrics()).toMatchObject({
      outcomes: { ambiguous: 1, dead: 0 },
      deadLetters: { ambiguous: 1 },
    });
  });

  it('a synchronous throw and a thrown non-Error are retryable failures too', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const consumer = h.process(
      (job) => {
        if (job.id === 'a') throw new TypeError('sync');
        return Promise.reject('a plain string');
      },
      { concurrency: 2 },
    );
    await consumer.worker.runOnce();
    const records = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(records.map((r) => [r.id, r.outcome, r.error]).sort()).toEqual([
      ['a', 'retried', 'sync'],
      ['b', 'retried', 'a plain string'],
    ]);
  });

  it('a result whose then throws is a rejection, as await takes it: retried, and the rest of its batch runs', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    const consumer = h.process(
      (job) => {
        if (job.id === 'a') {
          return {
            // biome-ignore lint/suspicious/noThenProperty: the thenable under test
            then() {
              throw new Error('then threw');
            },
          } as unknown as Promise<void>;
        }
        if (job.id === 'b') {
          // Both callbacks, then a throw: the first counts.
          return {
            // biome-ignore lint/suspicious/noThenProperty: the thenable under test
            then(resolve: () => void, reject: (error: unknown) => void) {
              resolve();
              reject(new Error('second'));
              throw new Error('third');
            },
          } as unknown as Promise<void>;
        }
      },
      { concurrency: 3 },
    );
    expect(await consumer.worker.runOnce()).toBe(3);
    const records = [];
    for (let i = 0; i < 3; i++) records.push(await consumer.nextOutcome());
    expect(records.map((r) => [r.id, r.outcome, r.error]).sort()).toEqual([
      ['a', 'retried', 'then threw'],
      ['b', 'acked', undefined],
      ['c', 'acked', undefined],
    ]);
    expect(consumer.worker.metrics()).toMatchObject({ inHand: 0, abandonedHandlers: 0 });
  });

  it('a thrown value whose message cannot be read is retried, and the rest of its batch runs', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
    const unreadable = new Error('hidden');
    Object.defineProperty(unreadable, 'message', {
      get() {
        throw new Error('no message');
      },
    });
    const throwing = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error('no prototype');
        },
      },
    );
    const consumer = h.process(
      (job) => {
        if (job.id === 'a') throw unreadable;
        if (job.id === 'b') return Promise.reject(unreadable);
        if (job.id === 'c') throw throwing;
      },
      { concurrency: 4 },
    );
    expect(await consumer.worker.runOnce()).toBe(4);
    const records = [];
    for (let i = 0; i < 4; i++) records.push(await consumer.nextOutcome());
    expect(records.map((r) => [r.id, r.outcome, r.error]).sort()).toEqual([
      ['a', 'retried', 'a thrown value that cannot be shown'],
      ['b', 'retried', 'a thrown value that cannot be shown'],
      ['c', 'retried', '{}'],
      ['d', 'acked', undefined],
    ]);
    expect(consumer.worker.metrics().inHand).toBe(0);
  });
});
