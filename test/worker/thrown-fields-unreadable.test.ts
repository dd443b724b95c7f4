import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/core/index.js';
import { decide, PermanentError, RetryableError } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/** `error` with its own `name` field replaced by a getter that throws. */
function unreadable<E extends Error>(error: E, name: 'reason' | 'delay'): E {
  Object.defineProperty(error, name, {
    get() {
      throw new Error(`no ${name} today`);
    },
  });
  return error;
}

const backoff = { baseDelay: 1000, maxDelay: 60_000, factor: 2, jitter: 0.5 };
const input = { id: 'job-1', deliveryCount: 1, maxDeliveries: 3, backoff };

describe('decide, given a thrown error whose fields cannot be read', () => {
  it('a PermanentError whose reason getter throws dies at once as permanent, saying why', () => {
    const decision = decide(
      { status: 'threw', error: unreadable(new PermanentError('refused'), 'reason') },
      input,
    );
    expect(decision).toEqual({
      action: 'dead-letter',
      kind: 'dead',
      reason: 'permanent',
      error: 'refused (its reason could not be read: no reason today; dead-lettered as permanent)',
    });
  });

  it('a RetryableError whose delay getter throws, or whose delay cannot be shown, is retried after the backoff', () => {
    const fallback = backoffDelay({ id: 'job-1', attempt: 1, ...backoff });
    const throwing = unreadable(new RetryableError('slow down'), 'delay');
    expect(decide({ status: 'threw', error: throwing }, input)).toEqual({
      action: 'retry',
      kind: 'retried',
      delay: fallback,
      reason: 'retryable',
      error: `slow down (its delay could not be read: no delay today: retried after the backoff's ${fallback} ms)`,
    });
    const shapeless = {
      toString() {
        throw new Error('no text');
      },
    };
    const odd = new RetryableError('slow down', { delay: shapeless as unknown as number });
    expect(decide({ status: 'threw', error: odd }, input)).toEqual({
      action: 'retry',
      kind: 'retried',
      delay: fallback,
      reason: 'retryable',
      error: `slow down (its delay of object is not an integer ≥ 0 ms: retried after the backoff's ${fallback} ms)`,
    });
  });
});

describeEngines(engines, 'thrown errors with unreadable fields', (open) => {
  it('each job is settled once: the PermanentError dead, the RetryableError retried, none left leased', async () => {
    const h = await open();
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const consumer = h.process(
      (job) => {
        throw job.id === 'a'
          ? unreadable(new PermanentError('refused', { reason: 'schema' }), 'reason')
          : unreadable(new RetryableError('slow down', { delay: 5 }), 'delay');
      },
      { concurrency: 2 },
    );
    expect(await consumer.worker.runOnce()).toBe(2);
    const records = [await consumer.nextOutcome(), await consumer.nextOutcome()];
    expect(records.map((r) => [r.id, r.outcome, r.reason]).sort()).toEqual([
      ['a', 'dead', 'permanent'],
      ['b', 'retried', 'retryable'],
    ]);
    expect((await h.queue.deadLetters()).map((d) => [d.id, d.reason])).toEqual([
      ['a', 'permanent'],
    ]);
    const view = await h.queue.inspect();
    expect(view.active).toEqual([]);
    expect(consumer.worker.metrics()).toMatchObject({ inHand: 0, settleErrors: 0 });
  });
});
