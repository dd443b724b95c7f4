import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { ValidationError } from '../../src/core/index.js';
import { ManualClock, open } from '../../src/index.js';
import { Worker, type WorkerOptions } from '../../src/worker/index.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

async function queue(): Promise<Queue> {
  const broker = await open('memory:', { clock: new ManualClock() });
  closing.push(() => broker.close());
  return broker.queue('jobs', { visibility: 1000, maxDeliveries: 3 });
}

function issuesOf(options: unknown, q: Queue): readonly string[] {
  try {
    new Worker(q, async () => {}, options as WorkerOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
    return (error as ValidationError).issues;
  }
  throw new Error(`expected a ValidationError for ${JSON.stringify(options)}`);
}

it('options and backoff that are not plain objects are refused, null and lists included', async () => {
  const q = await queue();
  expect(issuesOf([], q)).toEqual(['worker: options must be an object']);
  expect(issuesOf([{ concurrency: 0 }], q)).toEqual(['worker: options must be an object']);
  expect(issuesOf({ backoff: null }, q)).toEqual(['worker: backoff must be an object']);
  expect(issuesOf({ backoff: [] }, q)).toEqual(['worker: backoff must be an object']);
  expect(issuesOf({ backoff: [1000] }, q)).toEqual(['worker: backoff must be an object']);
  // Left out, or undefined, it takes the defaults.
  expect(() => new Worker(q, async () => {}, { backoff: undefined })).not.toThrow();
  expect(() => new Worker(q, async () => {})).not.toThrow();
});
