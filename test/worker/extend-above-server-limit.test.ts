import { afterEach, describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import {
  type OutcomeRecord,
  silentLogger,
  type WorkerErrorSource,
  work,
} from '../../src/worker/index.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The longest lease the test server takes (ms). */
const MAX_VISIBILITY = 60_000;

/** A memory broker behind a server whose leases are at most MAX_VISIBILITY, and a client of it. */
async function client(transport: 'stream' | 'http') {
  const inner = await open('memory:');
  cleanups.push(() => inner.close());
  const app = await createApp({
    broker: inner,
    receiptSecret: 'worker-suite-secret-of-32-characters',
    limits: { maxVisibilityMs: MAX_VISIBILITY },
  });
  cleanups.push(() => app.close());
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const remote = new RemoteBroker(url, { transport });
  cleanups.push(() => remote.close());
  return { inner, remote };
}

describe.each(['stream', 'http'] as const)('over %s', (transport) => {
  it('ctx.extend asking for more than the server takes gets its longest lease, and no background failure', async () => {
    const { inner, remote } = await client(transport);
    const queue = await remote.queue('long', { visibility: 10_000 });
    await queue.publish({ id: 'a' });
    const answers: unknown[] = [];
    const errors: [unknown, WorkerErrorSource][] = [];
    const outcomes: OutcomeRecord[] = [];
    let activeDeadline: number | undefined;
    let askedAt = 0;
    const worker = await work(
      queue,
      async (_job, ctx) => {
        askedAt = Date.now();
        answers.push(await ctx.extend(2 * MAX_VISIBILITY).catch((error: unknown) => error));
        activeDeadline = (await (await inner.queue('long')).inspect()).active[0]?.deadline;
      },
      { logger: silentLogger, wait: 100 },
    );
    worker.on('error', (error, during) => errors.push([error, during]));
    worker.on('outcome', (record) => outcomes.push(record));
    const end = Date.now() + 5000;
    while (outcomes.length === 0 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await worker.close();
    expect(errors).toEqual([]);
    expect(answers).toHaveLength(1);
    expect(typeof answers[0]).toBe('number');
    // The lease runs MAX_VISIBILITY from the extension: far past the queue's 10 s, not past the cut.
    expect(answers[0]).toBe(activeDeadline);
    expect(answers[0] as number).toBeGreaterThan(askedAt + MAX_VISIBILITY / 2);
    expect(answers[0] as number).toBeLessThanOrEqual(Date.now() + MAX_VISIBILITY);
    expect(outcomes.map((record) => record.outcome)).toEqual(['acked']);
    expect(worker.metrics()).toMatchObject({ renewals: 1, renewalErrors: 0 });
  });
});
