import { afterEach, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { Gate, type Harness } from '../../src/testing/index.js';
import { type JobContext, LeaseLostError, work } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'R28 a cancelled job stops its handler', (openHarness) => {
  async function holding(h: Harness) {
    const gate = new Gate();
    const contexts: JobContext[] = [];
    const consumer = h.process(async (_job, ctx) => {
      contexts.push(ctx);
      await gate.pass(ctx.signal);
    });
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await gate.arrivedAt(1);
    return { consumer, ctx: contexts[0] as JobContext };
  }

  it('R28 without news of the cancel, the signal fires at the next renewal (the extend is refused)', async () => {
    const h = await openHarness();
    const { consumer, ctx } = await holding(h);
    await h.advance(100);
    expect(await h.queue.cancel('a')).toBe(true);
    await h.advance(500);
    expect(ctx.signal.aborted).toBe(false);
    // Two thirds of the 1000 ms lease: the renewal is refused, the lease is lost.
    await h.advance(100);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(ctx.signal.reason).toMatchObject({ reason: 'renewal-refused', token: 1 });
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'lease-lost' });
    expect(await h.queue.job('a')).toMatchObject({ state: 'dead', reason: 'cancelled' });
  });
});

describe('R28 in-process, the engine tells the worker at once', () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  for (const url of ['memory:', 'sqlite::memory:']) {
    it(`R28 ${url} the handler's signal fires right after the cancel, long before any renewal`, async () => {
      const broker = await open(url);
      closing.push(() => broker.close());
      const queue = await broker.queue('long', { visibility: 60_000 });
      const started = new Gate();
      let seen: AbortSignal | undefined;
      const aborted = new Promise<unknown>((resolve) => {
        void (async () => {
          const worker = await work(queue, async (_job, ctx) => {
            seen = ctx.signal;
            started.open();
            await new Promise<void>((done) =>
              ctx.signal.addEventListener('abort', () => done(), { once: true }),
            );
            resolve(ctx.signal.reason);
          });
          closing.push(() => worker.close({ timeout: 0 }));
        })();
      });
      await queue.publish({ id: 'report' });
      await started.pass();
      const cancelledAt = Date.now();
      expect(await queue.cancel('report')).toBe(true);
      const reason = await aborted;
      expect(Date.now() - cancelledAt).toBeLessThan(1_000);
      expect(reason).toBeInstanceOf(LeaseLostError);
      expect(reason).toMatchObject({ reason: 'cancelled', id: 'report' });
      expect(seen?.aborted).toBe(true);
      expect(await queue.job('report')).toMatchObject({ state: 'dead', reason: 'cancelled' });
    });
  }
});
