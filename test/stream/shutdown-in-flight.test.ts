import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Broker, Queue } from '../../src/broker/index.js';
import { openRemote } from '../../src/client/index.js';
import type { Operation, Outcome } from '../../src/core/index.js';
import { open, silentLogger, work } from '../../src/index.js';
import { createApp, DEFAULT_CONFIG, startServer } from '../../src/server/index.js';
import type { OutcomeRecord } from '../../src/worker/job.js';
import { startTestServer, withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';
import { type Frame, FrameClient } from './frames.js';

// Shutdown of a stream connection (docs/stream.md, docs/operations.md "Shutdown"): frames in
// flight are answered before the close (1001), frames that come after are answered CLOSED and
// change nothing, and no operation is applied without its answer.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tempStorage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-stream-shutdown-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, 'leaseq.db')}`;
}

/**
 * A broker whose queues hold back the answers of chosen batches: the operations are applied
 * (committed) at once, their outcomes are returned once `release()` is called. So a batch is
 * "in flight" on its connection, applied but not answered, for as long as a test needs.
 */
function gated(real: Broker) {
  let holding: ((operations: readonly Operation[]) => boolean) | undefined;
  let release = () => {};
  let gate = Promise.resolve();
  const held: Operation[][] = [];
  const wrap = (queue: Queue): Queue =>
    Object.assign(Object.create(queue), {
      execute: async (operations: Operation[]): Promise<Outcome[]> => {
        const outcomes = queue.execute(operations);
        if (holding?.(operations)) {
          held.push(operations);
          await gate;
        }
        return outcomes;
      },
    });
  const broker = withWrappedQueues(real, wrap);
  return {
    broker,
    held,
    /** From now on, batches that pass `test` are held until `release()`. */
    hold(test: (operations: readonly Operation[]) => boolean) {
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      holding = test;
    },
    release() {
      holding = undefined;
      release();
    },
  };
}

/** A server (createApp, as startTestServer) over a gated storage; closing it closes the storage. */
async function serveGated(url: string) {
  const real = await open(url);
  const gate = gated(real);
  const app = await createApp({
    receiptSecret: 'test-secret-of-at-least-32-characters',
    broker: gate.broker,
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  let closing: Promise<void> | undefined;
  const server = {
    baseUrl,
    close: () => {
      closing ??= app.close().finally(() => real.close());
      return closing;
    },
  };
  return { gate, server };
}

const publishFrame = (id: number, ids: string[]) => ({
  type: 'batch',
  id,
  queue: 'jobs',
  operations: [{ type: 'publish', jobs: ids.map((job) => ({ id: job, payload: { job } })) }],
});

/** Ids of the jobs stored in `url` (the server closed), among `ids`. */
async function storedAmong(url: string, ids: string[]): Promise<Set<string>> {
  const broker = await open(url);
  try {
    const queue = await broker.queue('jobs');
    const stored = new Set<string>();
    for (const id of ids) if ((await queue.job(id)) !== undefined) stored.add(id);
    return stored;
  } finally {
    await broker.close();
  }
}

describe('a stream connection at shutdown', () => {
  it('answers the batches in flight, refuses later frames with CLOSED, stops pushing, then closes with 1001', async () => {
    const url = tempStorage();
    const { gate, server } = await serveGated(url);
    cleanups.push(() => gate.release());
    cleanups.push(() => server.close());
    await gate.broker.queue('jobs', { visibility: 60_000 });
    await gate.broker.queue('other', { visibility: 60_000 });
    const client = await FrameClient.open(server.baseUrl);
    cleanups.push(() => client.close());
    // A subscription waiting on an empty queue (of its own: the held publishes would wake it).
    const subscribed = await client.request({
      type: 'subscribe',
      id: 1,
      queue: 'other',
      prefetch: 10,
    });
    expect(subscribed.type).toBe('subscribed');
    // Ten publish batches, applied but held unanswered.
    gate.hold((operations) => operations.some((operation) => operation.type === 'publish'));
    const inFlight = Array.from({ length: 10 }, (_, k) => k + 2);
    for (const id of inFlight) client.send(publishFrame(id, [`in-${id}-a`, `in-${id}-b`]));
    await until(() => gate.held.length === inFlight.length, {
      what: 'every batch held',
      timeout: 10_000,
      interval: 5,
    });

    const closing = server.close();
    await settle(50);
    // The connection is still open, owing ten answers; frames sent now change nothing.
    expect(client.closeCode).toBeUndefined();
    const late = [20, 21, 22];
    for (const id of late) client.send(publishFrame(id, [`late-${id}`]));
    client.send({ type: 'credit', id: 23, subscription: 1, prefetch: 5 });
    // A job made ready now is not pushed: the subscription has stopped.
    await (await gate.broker.queue('other')).publish({ id: 'not-pushed', payload: 0 });
    await settle(100);
    gate.release();
    expect(await client.closed).toBe(1001);
    await closing;

    const answers = new Map<number, Frame>();
    for (const frame of client.frames) if (frame.id !== undefined) answers.set(frame.id, frame);
    for (const id of inFlight) {
      expect(answers.get(id)).toMatchObject({ type: 'results', results: [{ ok: true }] });
    }
    for (const id of [...late, 23]) {
      expect(answers.get(id)).toMatchObject({ type: 'error', error: { code: 'CLOSED' } });
    }
    // Answers in the order of their frames, before the close.
    const order = client.frames.filter((frame) => frame.id !== undefined && frame.id > 1);
    expect(order.map((frame) => frame.id)).toEqual([...inFlight, ...late, 23]);
    expect(client.pushed(1)).toEqual([]);

    const inIds = inFlight.flatMap((id) => [`in-${id}-a`, `in-${id}-b`]);
    const stored = await storedAmong(url, [...inIds, ...late.map((id) => `late-${id}`)]);
    expect([...stored].sort()).toEqual([...inIds].sort());
    const again = await open(url);
    cleanups.push(() => again.close());
    // The job published during shutdown was not leased to the stopped subscription.
    expect(await (await again.queue('jobs')).stats()).toMatchObject({ ready: 20, active: 0 });
    expect(await (await again.queue('other')).stats()).toMatchObject({ ready: 1, active: 0 });
  });

  it('pipelined publishes racing the close: each is answered and stored, or refused CLOSED and not stored', async () => {
    const url = tempStorage();
    const server = await startTestServer({ url });
    cleanups.push(() => server.close());
    await server.broker.queue('jobs');
    const client = await FrameClient.open(server.baseUrl);
    cleanups.push(() => client.close());
    const sent: number[] = [];
    let next = 1;
    let sending = true;
    const ids = (id: number) => [`p-${id}-0`, `p-${id}-1`, `p-${id}-2`];
    // Frames keep going out, several per turn of the loop, until the connection closes.
    const pump = (async () => {
      while (sending && client.closeCode === undefined) {
        for (let k = 0; k < 4; k++) {
          sent.push(next);
          client.send(publishFrame(next, ids(next)));
          next += 1;
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await until(() => client.frames.filter((frame) => frame.type === 'results').length >= 20, {
      what: '20 results',
      timeout: 10_000,
      interval: 5,
    });
    await server.close();
    sending = false;
    await pump;
    expect(await client.closed).toBe(1001);

    const answers = new Map<number, Frame>();
    for (const frame of client.frames) if (frame.id !== undefined) answers.set(frame.id, frame);
    const stored = await storedAmong(url, sent.flatMap(ids));
    const wrong: string[] = [];
    for (const id of sent) {
      const answer = answers.get(id);
      const storedCount = ids(id).filter((job) => stored.has(job)).length;
      if (answer?.type === 'results') {
        if (storedCount !== 3) wrong.push(`${id}: answered results, ${storedCount} of 3 stored`);
      } else if (answer?.type === 'error') {
        if (answer.error.code !== 'CLOSED') wrong.push(`${id}: ${answer.error.code}`);
        if (storedCount !== 0) wrong.push(`${id}: refused CLOSED yet ${storedCount} stored`);
      } else if (storedCount !== 0) {
        wrong.push(`${id}: not answered yet ${storedCount} of 3 stored`);
      }
    }
    expect(wrong).toEqual([]);
    expect(answers.size).toBeGreaterThan(20);
  });

  it('a worker acking over the stream as the server shuts down: every ack that landed was answered true', async () => {
    const url = tempStorage();
    const { gate, server } = await serveGated(url);
    cleanups.push(() => gate.release());
    cleanups.push(() => server.close());
    const client = await openRemote(server.baseUrl);
    cleanups.push(() => client.close());
    expect(client.transport).toBe('stream');
    const queue = await client.queue('jobs', { visibility: 60_000 });
    const count = 200;
    for (let from = 0; from < count; from += 100) {
      await queue.publishBatch(
        Array.from({ length: 100 }, (_, k) => ({ id: `job-${from + k}`, payload: from + k })),
      );
    }
    const records: OutcomeRecord[] = [];
    const worker = await work(queue, async () => settle(1), {
      concurrency: 4,
      logger: silentLogger,
    });
    cleanups.push(() => worker.close());
    worker.on('outcome', (record) => records.push(record));
    await until(() => records.length >= 20, { what: '20 outcomes', timeout: 10_000, interval: 5 });
    // Ack batches from now on are applied but held unanswered.
    gate.hold((operations) => operations.some((operation) => operation.type === 'ack'));
    await until(() => gate.held.length >= 2, {
      what: 'two ack batches held',
      timeout: 10_000,
      interval: 5,
    });
    const closing = server.close();
    await settle(100);
    gate.release();
    await closing;
    await worker.close();
    await client.close();

    const landed = new Set<string>();
    {
      const broker = await open(url);
      const stored = await broker.queue('jobs');
      for (let k = 0; k < count; k++) {
        if ((await stored.job(`job-${k}`)) === undefined) landed.add(`job-${k}`);
      }
      await broker.close();
    }
    const acked = new Set(records.filter((r) => r.outcome === 'acked').map((r) => r.id));
    const failed = records.filter((r) => r.reason === 'settle-failed').map((r) => r.id);
    expect(gate.held.length).toBeGreaterThanOrEqual(2);
    expect(failed.filter((id) => landed.has(id))).toEqual([]);
    expect([...landed].filter((id) => !acked.has(id))).toEqual([]);
    expect(acked.size).toBe(landed.size);
  });

  it('cuts a connection still owing answers after shutdownTimeoutMs, and says so', async () => {
    const real = await open('memory:');
    const gate = gated(real);
    cleanups.push(() => gate.release());
    const lines: Record<string, unknown>[] = [];
    const write = (text: string) => {
      for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line));
    };
    const server = await startServer(
      { ...DEFAULT_CONFIG, storage: 'memory:', port: 0, shutdownTimeoutMs: 200 },
      { broker: gate.broker, logDestination: { write } },
    );
    cleanups.push(() => server.close());
    await real.queue('jobs');
    const client = await FrameClient.open(server.url);
    cleanups.push(() => client.close());
    gate.hold(() => true);
    client.send(publishFrame(1, ['stuck']));
    await until(() => gate.held.length === 1, {
      what: 'the batch held',
      timeout: 10_000,
      interval: 5,
    });
    const started = Date.now();
    await server.close();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(150);
    expect(elapsed).toBeLessThan(2000);
    // Cut, not closed: the answer it owed never came.
    expect(await client.closed).toBe(1006);
    expect(client.frames.filter((frame) => frame.id === 1)).toEqual([]);
    expect(lines.map((line) => line.msg)).toContain(
      'stream connections still answering after the shutdown timeout: cutting them',
    );
  });
});
