import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import {
  closeOnSignals,
  jsonLogger,
  open,
  openRemote,
  type Queue,
  Worker,
  work,
} from '../../src/index.js';
import { Harness, silentLogger } from '../../src/testing/index.js';

// The options of every method count their unknown names as operations do (docs/spec.md,
// "Operations as values"): at most 10 named, each cut to its first 64 characters (saying how
// long it was), the rest counted, so an error never echoes a whole megabyte of names.

// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;

const LONG = `${'n'.repeat(64)}${'x'.repeat(999_936)}`;
const CUT = `${'n'.repeat(64)}…`;
const manyNames = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, n) => [`option${n}`, 1]));

/** The ValidationError `call` throws or rejects with. */
async function refusal(call: () => unknown): Promise<ValidationError> {
  let thrown: unknown;
  try {
    await call();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  return thrown as ValidationError;
}

/** Refused with 5,000 unknown names, the first 10 named; with one long name, cut. */
async function bounded(door: (options: object) => unknown, shown: RegExp): Promise<void> {
  const many = await refusal(() => door(manyNames(5000)));
  expect(many.code).toBe('INVALID_ARGUMENT');
  expect(many.message).toMatch(/and 4,990 more unknown \w+ ?\w*s\b/);
  expect(many.message.length).toBeLessThan(1500);
  const long = await refusal(() => door({ [LONG]: 1 }));
  expect(long.message).toContain(`${CUT}`);
  expect(long.message).toContain('(1,000,000 characters)');
  expect(long.message).toMatch(shown);
  expect(long.message.length).toBeLessThan(300);
}

let broker: Awaited<ReturnType<typeof open>>;
let queue: Queue;

beforeAll(async () => {
  broker = await open('memory:');
  queue = await broker.queue('jobs', { visibility: 60_000 });
});

afterAll(async () => {
  await broker.close();
});

describe('errors about unknown option names of the library methods echo a bounded part of them', () => {
  it('open, and openRemote', async () => {
    await bounded((options) => open('memory:', bad(options)), /^unknown option "n+…" .* of open$/);
    await bounded(
      (options) => openRemote('http://127.0.0.1:1', bad(options)),
      /^unknown option "n+…" \(1,000,000 characters\)$/,
    );
  });

  it('a broker close', async () => {
    const other = await open('memory:');
    try {
      await bounded((options) => other.close(bad(options)), /^close: unknown option "n+…"/);
    } finally {
      await other.close();
    }
  });

  it('a schedule and a scheduler', async () => {
    await bounded(
      (options) => queue.schedule('nightly', 60_000, bad(options)),
      /^unknown schedule option n+… \(1,000,000 characters\)$/,
    );
    await bounded(
      (options) => broker.scheduler?.(bad(options)),
      /^unknown scheduler option "n+…" \(1,000,000 characters\): the option is intervalMs$/,
    );
    expect(await queue.schedules()).toEqual([]);
  });

  it('a worker: its options, its backoff, its close and runOnce, closeOnSignals, jsonLogger', async () => {
    const handler = async () => {};
    await bounded(
      (options) => work(queue, handler, bad(options)),
      /^worker: unknown option n+… \(1,000,000 characters\)$/,
    );
    await bounded(
      (options) => work(queue, handler, bad({ backoff: options })),
      /^worker: unknown option backoff\.n+… \(1,000,000 characters\)$/,
    );
    const worker = new Worker(queue, handler, { logger: silentLogger });
    await bounded((options) => worker.runOnce(bad(options)), /^runOnce: unknown option "n+…"/);
    await bounded((options) => worker.close(bad(options)), /^close: unknown option "n+…"/);
    await bounded(
      (options) => closeOnSignals(worker, bad(options)),
      /^closeOnSignals: unknown option "n+…"/,
    );
    await bounded((options) => jsonLogger(bad(options)), /^jsonLogger: unknown option "n+…"/);
    await worker.close({ timeout: 0 });
    expect(worker.metrics().fetchErrors).toBe(0);
  });

  it('the test harness: Harness.open, advance and the faults of a process', async () => {
    await bounded((options) => Harness.open(bad(options)), /^Harness\.open: unknown option "n+…"/);
    const h = await Harness.open();
    try {
      await bounded((options) => h.advance(0, bad(options)), /^advance: unknown option "n+…"/);
      const process = h.process(async () => {});
      await bounded(
        (options) => process.faults.failRenewals(bad(options)),
        /^failRenewals: unknown option "n+…"/,
      );
    } finally {
      await h.close();
    }
  });
});
