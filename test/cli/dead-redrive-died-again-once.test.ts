import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, Queue } from '../../src/broker/index.js';
import type { DeadLetterPageOptions, Operation } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { leaseq } from './context.js';
import { deadLetterReady, serveForCommands } from './dead-set.js';

// `leaseq dead redrive <queue>` without ids reads the dead set page by page, then redrives the
// ids in batches. A job redriven by another client and dead again while the pages are read comes
// on a later page too (R34: it takes its new place); the command redrives it once, as every
// other job dead when it started, even where a worker fails it again between two batches.

const DEAD = 1_200;

let broker: Broker;
let close: () => Promise<void>;
let env: Record<string, string>;
let firstPageRead = false;
let killed = 0;

/** A worker that fails every ready job at once. */
async function failEveryReady(queue: Queue): Promise<void> {
  killed += await deadLetterReady(queue, 'failed again');
}

beforeAll(async () => {
  broker = await open('memory:');
  ({ env, close } = await serveForCommands(
    broker,
    withWrappedQueues(broker, (queue: Queue) =>
      Object.assign(Object.create(queue) as Queue, {
        deadLetterPage: async (options?: DeadLetterPageOptions) => {
          const page = await queue.deadLetterPage(options);
          if (!firstPageRead && options?.payloads === false) {
            firstPageRead = true;
            // Another client redrives the first dead job, and it dies again.
            await queue.redrive(['job-0']);
            await failEveryReady(queue);
          }
          return page;
        },
        redrive: async (ids?: readonly string[]) => {
          const count = await queue.redrive(ids);
          await failEveryReady(queue);
          return count;
        },
        execute: async (operations: readonly Operation[]) => {
          const outcomes = await queue.execute(operations);
          if (operations.some((operation) => operation.type === 'redrive')) {
            await failEveryReady(queue);
          }
          return outcomes;
        },
      }),
    ),
  ));
  const queue = await broker.queue('again', { maxDeliveries: 1 });
  await queue.publishBatch(Array.from({ length: DEAD }, (_, n) => ({ id: `job-${n}` })));
  await deadLetterReady(queue, 'broken');
});

afterAll(async () => {
  await close?.();
});

describe('dead redrive of every dead job while jobs die again', () => {
  it('redrives a job listed twice once', async () => {
    const run = await leaseq(['dead', 'redrive', 'again', '--json'], { env });
    expect(run.code).toBe(0);
    expect(firstPageRead).toBe(true);
    expect(JSON.parse(run.stdout)).toEqual({ redriven: DEAD });
    const stats = await broker.handle('again').stats();
    // The other client's redrive of job-0, and the command's of each job once.
    expect(stats.redriven).toBe(DEAD + 1);
    expect(stats.dead).toBe(DEAD);
    expect(killed).toBe(DEAD + 1);
  });
});
