import { expect, it } from 'vitest';
import { Harness } from '../../src/testing/index.js';
import { type OutcomeRecord, PermanentError } from '../../src/worker/index.js';
import { recordingLogger } from './log-lines.js';

/** What a handler throws: a message of five million characters, as one built from a payload. */
const HUGE = 5_000_000;
const KEPT = 8192;
const CUT = `… (${(HUGE - KEPT).toLocaleString('en-US')} more characters)`;

function expectBounded(text: unknown, start: string): void {
  expect(typeof text).toBe('string');
  const said = text as string;
  expect(said.length).toBeLessThan(KEPT + 200);
  expect(said.startsWith(start)).toBe(true);
  expect(said).toContain(CUT);
}

it('a handler error with a huge message is written cut to its first 8192 characters, saying how many more there were, in the outcome, the log line and lastError', async () => {
  const logger = recordingLogger();
  const h = await Harness.open({ queueOptions: { visibility: 60_000, maxDeliveries: 3 }, logger });
  try {
    await h.queue.publishBatch([
      { payload: 'retry' },
      { payload: 'permanent' },
      { payload: 'raw' },
    ]);
    const consumer = h.process<string>(
      async (job) => {
        if (job.payload === 'permanent') throw new PermanentError('p'.repeat(HUGE));
        if (job.payload === 'raw') throw 'r'.repeat(HUGE);
        throw new Error('e'.repeat(HUGE));
      },
      { concurrency: 1 },
    );
    const outcomes: OutcomeRecord[] = [];
    for (let settled = 0; settled < 3; ) {
      const started = await consumer.worker.runOnce();
      for (let n = 0; n < started; n++) outcomes.push(await consumer.nextOutcome());
      settled += started;
    }
    const byStart = (start: string) => outcomes.find((o) => o.error?.startsWith(start));
    expect(byStart('eee')?.outcome).toBe('retried');
    expect(byStart('ppp')?.outcome).toBe('dead');
    expect(byStart('rrr')?.outcome).toBe('retried');
    for (const start of ['eee', 'ppp', 'rrr']) expectBounded(byStart(start)?.error, start);
    const lines = logger.lines.filter((line) => line.fields.error !== undefined);
    expect(lines).toHaveLength(3);
    for (const line of lines)
      expectBounded(line.fields.error, String(line.fields.error).slice(0, 3));
    const { lastError } = consumer.worker.metrics();
    expectBounded(lastError?.message, 'rrr');
  } finally {
    await h.close();
  }
});

it('an auto-acked handler error with a huge message is written cut the same way', async () => {
  const logger = recordingLogger();
  const h = await Harness.open({ queueOptions: { visibility: 60_000 }, logger });
  try {
    await h.queue.publish({ payload: 'x' });
    const consumer = h.process(
      async () => {
        throw new Error('a'.repeat(HUGE));
      },
      { ack: 'auto' },
    );
    expect(await consumer.worker.runOnce()).toBe(1);
    const outcome = await consumer.nextOutcome();
    expect(outcome.outcome).toBe('lost');
    expectBounded(outcome.error, 'aaa');
    expectBounded(consumer.worker.metrics().lastError?.message, 'aaa');
    expectBounded(logger.lines.at(-1)?.fields.error, 'aaa');
  } finally {
    await h.close();
  }
});

it('a message a little longer than the bound is cut whole characters, never inside a surrogate pair', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 60_000, maxDeliveries: 1 } });
  try {
    await h.queue.publish({ payload: 'x' });
    // 8191 characters, then pairs: the 8192nd code unit is the first half of a pair.
    const message = `${'a'.repeat(KEPT - 1)}${'😀'.repeat(10)}`;
    const consumer = h.process(async () => {
      throw new Error(message);
    });
    expect(await consumer.worker.runOnce()).toBe(1);
    const { error } = await consumer.nextOutcome();
    expect(error).toBe(`${'a'.repeat(KEPT - 1)}… (20 more characters)`);
  } finally {
    await h.close();
  }
});
