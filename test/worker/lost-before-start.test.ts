import { afterEach, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { type OutcomeRecord, silentLogger, work } from '../../src/worker/index.js';

/**
 * The jobs of one receive start one after another, and the event loop turns between them when
 * handlers block it (docs/worker.md). A job whose lease is lost in that turn is no longer the
 * worker's: its handler does not start.
 */
describe('a job lost before its handler started', () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  const cases = [
    { ids: ['a', 'b'], cancelled: 'b', which: 'the next' },
    { ids: ['a', 'b', 'c'], cancelled: 'c', which: 'a later' },
  ];
  for (const url of ['memory:', 'sqlite::memory:']) {
    for (const { ids, cancelled, which } of cases) {
      it(`R28 ${url} ${which} job of a receive, cancelled while the first blocked the loop, is not run`, async () => {
        const broker = await open(url);
        closing.push(() => broker.close());
        const queue = await broker.queue('jobs', { visibility: 60_000 });
        await queue.publishBatch(ids.map((id) => ({ id })));
        const ran: string[] = [];
        const outcomes: OutcomeRecord[] = [];
        const settled = new Promise<void>((resolve) => {
          void (async () => {
            const worker = await work(
              queue,
              (job) => {
                ran.push(job.id);
                if (job.id !== 'a') return;
                void queue.cancel(cancelled);
                const until = performance.now() + 30;
                while (performance.now() < until) {
                  // Blocking the loop, as CPU-bound work does: the worker lets it turn after.
                }
              },
              { concurrency: ids.length, logger: silentLogger },
            );
            closing.push(() => worker.close({ timeout: 0 }));
            worker.on('outcome', (record) => {
              outcomes.push(record);
              if (outcomes.length === ids.length) resolve();
            });
          })();
        });
        await settled;
        // The outcomes may all come in a turn the worker takes before starting a job: past it.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(ran).toEqual(ids.filter((id) => id !== cancelled));
        const seen = outcomes.map(({ id, outcome, reason }) => ({ id, outcome, reason }));
        expect(seen).toHaveLength(ids.length);
        expect(seen).toEqual(
          expect.arrayContaining(
            ids.map((id) =>
              id === cancelled
                ? { id, outcome: 'lease-lost', reason: 'cancelled' }
                : { id, outcome: 'acked', reason: undefined },
            ),
          ),
        );
        expect(await queue.job(cancelled)).toMatchObject({ state: 'dead', reason: 'cancelled' });
      });
    }
  }
});
