import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, Queue } from '../../src/broker/index.js';
import type { DeadLetterPageOptions } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { leaseq } from './context.js';
import { deadLetterReady, serveForCommands } from './dead-set.js';

// `leaseq dead list` in text output and `leaseq dead redrive <queue>` without ids read the dead
// set page by page without payloads: text shows none and a redrive needs only the ids (a dead set
// of large payloads read whole is hundreds of megabytes through the server and held at once by
// the command). `dead list --json` has them, as before.

const LISTED = 1_200;
const REDRIVEN = 2_500;

let broker: Broker;
let close: () => Promise<void>;
let env: Record<string, string>;
const pages: (DeadLetterPageOptions | undefined)[] = [];

beforeAll(async () => {
  broker = await open('memory:');
  ({ env, close } = await serveForCommands(
    broker,
    withWrappedQueues(broker, (queue: Queue) =>
      Object.assign(Object.create(queue) as Queue, {
        deadLetterPage: (options?: DeadLetterPageOptions) => {
          pages.push(options);
          return queue.deadLetterPage(options);
        },
      }),
    ),
  ));
  const queue = await broker.queue('listed', { maxDeliveries: 1 });
  await queue.publishBatch(
    Array.from({ length: LISTED }, (_, n) => ({ id: `job-${n}`, payload: { body: `p${n}` } })),
  );
  await deadLetterReady(queue, 'broken');
});

afterAll(async () => {
  await close?.();
});

describe('dead list reads payloads only for JSON output', () => {
  it('lists every dead job in text without their payloads, every page of them', async () => {
    pages.length = 0;
    const run = await leaseq(['dead', 'list', 'listed'], { env });
    expect(run.code).toBe(0);
    const heads = run.stdout.split('\n').filter((line) => line.startsWith('job-'));
    expect(heads).toHaveLength(LISTED);
    expect(heads[0]).toMatch(/^job-0 {2}reason=broken deliveries=1 /);
    expect(pages.length).toBeGreaterThanOrEqual(2);
    for (const options of pages) expect(options).toMatchObject({ payloads: false });
  });

  it('reads one page in text without payloads', async () => {
    pages.length = 0;
    const run = await leaseq(['dead', 'list', 'listed', '--limit', '2'], { env });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^job-0 {2}reason=broken/);
    expect(pages).toEqual([expect.objectContaining({ limit: 2, payloads: false })]);
  });

  it('keeps the payloads in JSON output', async () => {
    pages.length = 0;
    const run = await leaseq(['dead', 'list', 'listed', '--limit', '2', '--json'], { env });
    expect(run.code).toBe(0);
    const listed = JSON.parse(run.stdout) as { deadLetters: { id: string; payload: unknown }[] };
    expect(listed.deadLetters.map((dead) => [dead.id, dead.payload])).toEqual([
      ['job-0', { body: 'p0' }],
      ['job-1', { body: 'p1' }],
    ]);
    for (const options of pages) expect(options).not.toHaveProperty('payloads', false);
  });
});

describe('dead redrive of every dead job', () => {
  for (const transport of ['stream', 'http']) {
    it(`lists the dead jobs without their payloads, every page of them (${transport})`, async () => {
      const name = `unread-${transport}`;
      const queue = await broker.queue(name, { maxDeliveries: 1 });
      const ids = Array.from({ length: REDRIVEN }, (_, n) => `job-${n}`);
      await queue.publishBatch(ids.map((id) => ({ id, payload: { body: 'x'.repeat(100) } })));
      await deadLetterReady(queue);
      pages.length = 0;
      const run = await leaseq(['dead', 'redrive', name, '--transport', transport, '--json'], {
        env,
      });
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ redriven: REDRIVEN });
      // Three pages of at most 1,000, none of them with payloads.
      expect(pages.length).toBeGreaterThanOrEqual(3);
      for (const options of pages) expect(options).toMatchObject({ payloads: false });
      expect(await queue.stats()).toMatchObject({ ready: REDRIVEN, dead: 0, redriven: REDRIVEN });
      // Redriven in the order they died: the back of ready, oldest first.
      expect((await queue.inspect()).ready).toEqual(ids);
    });
  }
});
