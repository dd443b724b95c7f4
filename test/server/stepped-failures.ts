import { vi } from 'vitest';
import { type Broker, open, type Queue } from '../../src/index.js';
import { createApp, type Limits } from '../../src/server/index.js';
import { beforeStep } from '../engine/between-steps.js';
import { withWrappedQueues } from './helpers.js';

/** The calls that take steps when alone in their call on a SQL engine (R20). */
const STEPPED: ReadonlySet<string> = new Set(['redrive', 'purge', 'moveJobs']);

/** A server over a SQL engine whose next stepped call can be made to fail between its steps. */
export interface SteppedServer {
  baseUrl: string;
  /** The broker behind the server (not failing), to set up and check state. */
  broker: Broker;
  /**
   * The next redrive, purge or moveJobs the server runs alone in its call fails at its step
   * `step` (1: the first) with `failure()`: as if the storage failed there, the steps before
   * it committed. With `call`, the call-th such call from now (1: the next) fails so instead.
   */
  failAt(step: number, failure: () => Error, call?: number): void;
  close(): Promise<void>;
}

/**
 * Restore the seam with `vi.restoreAllMocks()` after each test, as between-steps.ts says; arming
 * it restores every mock too.
 */
export async function startSteppedServer(
  url: string,
  limits: Partial<Limits> = {},
): Promise<SteppedServer> {
  const real = await open(url);
  let armed: { step: number; failure: () => Error; callsLeft: number } | undefined;
  /** Called as a stepped call starts: arms the seam when it is the call `failAt` named. */
  const starting = () => {
    if (armed === undefined) return;
    armed.callsLeft -= 1;
    if (armed.callsLeft > 0) return;
    const { step, failure } = armed;
    armed = undefined;
    // A seam armed before, spent, would count this call's steps too: gone first.
    vi.restoreAllMocks();
    // Armed just before the call, nothing else under way: its steps are what it counts.
    beforeStep(step, async () => {
      throw failure();
    });
  };
  const broker = withWrappedQueues(real, (queue: Queue) =>
    Object.assign(Object.create(queue) as Queue, {
      // The routes call the methods; the batch route and the stream, execute.
      execute: (operations: Parameters<Queue['execute']>[0]) => {
        const [only] = operations;
        if (operations.length === 1 && STEPPED.has(only?.type ?? '')) starting();
        return queue.execute(operations);
      },
      redrive: (...args: Parameters<Queue['redrive']>) => {
        starting();
        return queue.redrive(...args);
      },
      purge: (...args: Parameters<Queue['purge']>) => {
        starting();
        return queue.purge(...args);
      },
      moveJobs: (...args: Parameters<Queue['moveJobs']>) => {
        starting();
        return queue.moveJobs(...args);
      },
    }),
  );
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker,
    limits,
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    baseUrl,
    broker: real,
    failAt(step, failure, call = 1) {
      armed = { step, failure, callsLeft: call };
    },
    async close() {
      await app.close();
      await real.close();
    },
  };
}

/** Ids `prefix0`, `prefix1`, … of `count` jobs published ready to `queue`, in that order. */
export async function readyJobs(queue: Queue, prefix: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, n) => `${prefix}${n}`);
  for (let start = 0; start < count; start += 500) {
    await queue.publishBatch(ids.slice(start, start + 500).map((id) => ({ id })));
  }
  return ids;
}

/** Ids of `count` jobs made dead in `queue`, in the order they died (rejected in one session). */
export async function deadJobs(queue: Queue, prefix: string, count: number): Promise<string[]> {
  const ids = await readyJobs(queue, prefix, count);
  const session = await queue.openSession();
  let last: number | undefined;
  for (;;) {
    const taken = await queue.receive({ max: 500, session });
    if (taken.length === 0) break;
    last = taken.at(-1)?.token;
  }
  if (last !== undefined) await queue.nackUpTo(session, last, { requeue: false });
  await queue.closeSession(session);
  return ids;
}
