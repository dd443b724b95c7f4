import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { ValidationError } from '../../src/core/index.js';
import { ManualClock, open } from '../../src/index.js';
import { silentLogger, Worker, type WorkerOptions, work } from '../../src/worker/index.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

async function queue(): Promise<Queue> {
  const broker = await open('memory:', { clock: new ManualClock() });
  closing.push(() => broker.close());
  return broker.queue('jobs', { visibility: 1000, maxDeliveries: 3 });
}

function issuesOf(make: () => unknown): readonly string[] {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
    return (error as ValidationError).issues;
  }
  throw new Error('expected a ValidationError');
}

it('bad options are refused with one typed error listing every problem', async () => {
  const q = await queue();
  const options = {
    concurrency: 0,
    wait: -1,
    visibility: 1.5,
    renew: 'sometimes',
    renewAt: 1,
    maxRenewals: -1,
    backoff: { baseDelay: -1, factor: 0.5, jitter: 2 },
    session: 'yes',
    clock: {},
    logger: console.log,
    retries: 3,
  } as unknown as WorkerOptions;
  expect(issuesOf(() => new Worker(q, async () => {}, options))).toEqual([
    'worker: unknown option retries',
    'worker: concurrency must be a positive integer, got 0',
    'worker: wait must be a positive integer (ms), got -1',
    'worker: visibility must be a positive integer (ms), got 1.5',
    'worker: renew must be one of auto, on-progress, never, got "sometimes"',
    'worker: renewAt must be a number in (0, 1), got 1',
    'worker: maxRenewals must be an integer ≥ 0 or Infinity, got -1',
    'worker: backoff.baseDelay must be an integer ≥ 0 (ms), got -1',
    'worker: backoff.factor must be a finite number ≥ 1, got 0.5',
    'worker: backoff.jitter must be a number in [0, 1], got 2',
    'worker: session must be an object of session options',
    'worker: clock must have now() and sleep()',
    'worker: logger must have info(), warn() and error()',
  ]);
});

it('a missing queue or handler is listed with the option problems', () => {
  const issues = issuesOf(
    () => new Worker(undefined as unknown as Queue, 'run' as never, { concurrency: 1.5 }),
  );
  expect(issues).toEqual([
    'worker: queue must be a Queue',
    'worker: handler must be a function',
    'worker: concurrency must be a positive integer, got 1.5',
  ]);
});

it('maxDelay below baseDelay is refused; a bare backoff takes the defaults', async () => {
  const q = await queue();
  expect(
    issuesOf(() => new Worker(q, async () => {}, { backoff: { baseDelay: 5000, maxDelay: 10 } })),
  ).toEqual(['worker: backoff.maxDelay must be an integer ≥ baseDelay (5000 ms), got 10']);
  // Both named at once, a bad baseDelay hiding no other problem.
  expect(
    issuesOf(
      () =>
        new Worker(q, async () => {}, {
          backoff: { baseDelay: 'x' as unknown as number, maxDelay: -3 },
        }),
    ),
  ).toEqual([
    'worker: backoff.baseDelay must be an integer ≥ 0 (ms), got "x"',
    'worker: backoff.maxDelay must be an integer ≥ 0 (ms), got -3',
  ]);
  expect(() => new Worker(q, async () => {}, { backoff: {} })).not.toThrow();
  expect(() => new Worker(q, async () => {}, { backoff: { baseDelay: 120_000 } })).not.toThrow();
});

it('session options and backoff names are checked as opening the session and backing off read them', async () => {
  const q = await queue();
  expect(
    issuesOf(
      () =>
        new Worker(q, async () => {}, {
          session: { prefetch: 0, timout: 30_000, ackTimeout: -1 } as never,
          backoff: { initialDelay: 10, max: 20 } as never,
        }),
    ),
  ).toEqual([
    'worker: unknown option backoff.initialDelay',
    'worker: unknown option backoff.max',
    'worker: session: unknown field "timout" of openSession',
    'worker: session: prefetch must be a positive integer, or Infinity for none (null in JSON), got 0',
    'worker: session: ackTimeout must be a positive integer, or Infinity for none (null in JSON), got -1',
  ]);
  // Refused before anything runs: no session was opened, no job taken.
  await q.publish({ id: 'a' });
  await expect(
    work(q, async () => {}, { session: { timeout: -1 }, logger: silentLogger }),
  ).rejects.toBeInstanceOf(ValidationError);
  expect(await q.stats()).toMatchObject({ ready: 1, active: 0, sessions: 0 });
});

it('good options are accepted, Infinity included', async () => {
  const q = await queue();
  const worker = new Worker(q, async () => {}, {
    concurrency: 8,
    wait: 1,
    visibility: 30_000,
    renew: 'on-progress',
    renewAt: 0.5,
    maxRenewals: Number.POSITIVE_INFINITY,
    backoff: { baseDelay: 0, maxDelay: 0, factor: 1, jitter: 0 },
    session: { timeout: 10_000 },
    clock: new ManualClock(),
    logger: silentLogger,
  });
  expect(worker.state).toBe('created');
});

it('work() fails when the queue cannot be read, and the worker does not run', async () => {
  const q = await queue();
  const broken: Queue = Object.create(q, {
    options: { value: () => Promise.reject(new Error('queue unreachable')) },
  });
  await expect(work(broken, async () => {}, { logger: silentLogger })).rejects.toThrow(
    'queue unreachable',
  );
});

it('work() lists every setting above the queue limits in one error, and nothing is received', async () => {
  const q = await queue();
  await q.publish({ id: 'a' });
  const bounded: Queue = Object.create(q, {
    limits: {
      value: async () => ({ maxDelayMs: 10_000, maxVisibilityMs: 10_000, maxBatch: 100 }),
    },
  });
  const refused = await work(bounded, async () => {}, {
    visibility: 20_000,
    backoff: { baseDelay: 1000, maxDelay: 30_000 },
    logger: silentLogger,
  }).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(ValidationError);
  expect((refused as ValidationError).issues).toEqual([
    'visibility is 20000 ms, above the longest lease the queue takes (maxVisibilityMs 10000): every receive would be refused',
    'backoff.maxDelay is 30000 ms, above the longest delay the queue takes (maxDelayMs 10000): retries would be refused',
  ]);
  expect(await q.stats()).toMatchObject({ ready: 1, deliveries: 0 });
});
