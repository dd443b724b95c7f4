import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { StreamMetrics } from '../../src/server/metrics.js';
import { call, withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';
import { type Frame, FrameClient } from './frames.js';

// Frames are run in the order they come (docs/stream.md). A frame that awaits something before
// it acts (a reserve naming no visibility reads the queue's lease; a subscribe opens) must not
// be overtaken by the frames sent behind it.

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closing.splice(0).reverse()) await close();
});

/**
 * A server whose queues' `method` waits, once `hold()` is called, until `release()`: with
 * `options`, a reserve naming no visibility, and a subscribe naming none, wait there for the
 * queue's lease; with `execute`, every batch frame waits for the storage. `counts` says how
 * many calls of it started, and the most under way at once.
 */
async function serveHolding(method: 'options' | 'execute' = 'options') {
  const real = await open('memory:');
  let held: Promise<void> | undefined;
  let release = () => {};
  const counts = { started: 0, running: 0, most: 0 };
  const broker = withWrappedQueues(real, (queue: Queue) =>
    Object.assign(Object.create(queue), {
      [method]: async (...args: unknown[]) => {
        counts.started += 1;
        counts.running += 1;
        counts.most = Math.max(counts.most, counts.running);
        try {
          if (held !== undefined) await held;
          return await (queue[method] as (...given: unknown[]) => Promise<unknown>)(...args);
        } finally {
          counts.running -= 1;
        }
      },
    }),
  );
  const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
  closing.push(
    () => real.close(),
    () => app.close(),
  );
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    baseUrl,
    counts,
    hold() {
      held = new Promise((resolve) => {
        release = resolve;
      });
    },
    release: () => release(),
  };
}

/** Counts the frames the server has read, to know that it has read those sent. */
function countFramesRead(): () => number {
  const counted = vi.spyOn(StreamMetrics.prototype, 'frameReceived');
  return () => counted.mock.calls.length;
}

describe('frames sent one behind the other', () => {
  it('a reserve naming no visibility runs before a publish sent behind it', async () => {
    const framesRead = countFramesRead();
    const server = await serveHolding();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());

    server.hold();
    const before = framesRead();
    client.send({ type: 'batch', id: 1, queue: 'jobs', operations: [{ type: 'reserve', max: 5 }] });
    client.send({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'publish', jobs: [{ id: 'later' }] }],
    });
    await until(() => framesRead() === before + 2, {
      what: 'both frames read',
      tries: 250,
      interval: 20,
    });
    // What the frames do without waiting for anything is done by now.
    await new Promise((resolve) => setTimeout(resolve, 0));
    server.release();

    const reserved = await client.next((frame) => frame.id === 1);
    const published = await client.next((frame) => frame.id === 2);
    expect(published.results).toEqual([{ ok: true, value: [{ id: 'later', duplicate: false }] }]);
    // The queue was empty when the reserve came: the job published after it stays ready.
    expect(reserved.results).toEqual([{ ok: true, value: [] }]);
    const stats = await client.request({
      type: 'batch',
      id: 3,
      queue: 'jobs',
      operations: [{ type: 'stats' }],
    });
    expect(stats.results[0].value).toMatchObject({ ready: 1, active: 0 });
  });

  it('credit, unsubscribe and subscribe behind a subscribe still opening apply in their order', async () => {
    const framesRead = countFramesRead();
    const server = await serveHolding();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());

    server.hold();
    const before = framesRead();
    const frames = [
      // Waits for the queue's lease: still opening while the others arrive.
      { type: 'subscribe', id: 7, queue: 'jobs', prefetch: 1 },
      { type: 'unsubscribe', id: 8, subscription: 7 },
      { type: 'unsubscribe', id: 9, subscription: 7 },
      { type: 'credit', id: 10, subscription: 7, prefetch: 2 },
      // The id is free again once its unsubscribe ran.
      { type: 'subscribe', id: 7, queue: 'jobs', prefetch: 1, visibility: 30_000 },
      { type: 'credit', id: 11, subscription: 7, prefetch: 3 },
      { type: 'unsubscribe', id: 12, subscription: 7 },
    ];
    for (const frame of frames) client.send(frame);
    await until(() => framesRead() === before + frames.length, {
      what: 'every frame read',
      tries: 250,
      interval: 20,
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    server.release();

    await client.next((frame) => frame.id === 12);
    const answers = client.frames
      .filter((frame: Frame) => frame.type !== 'ready' && frame.type !== 'deliveries')
      .map((frame: Frame) => ({ type: frame.type, id: frame.id, code: frame.error?.code }));
    expect(answers).toEqual([
      { type: 'subscribed', id: 7, code: undefined },
      { type: 'unsubscribed', id: 8, code: undefined },
      { type: 'error', id: 9, code: 'INVALID_ARGUMENT' },
      { type: 'error', id: 10, code: 'INVALID_ARGUMENT' },
      { type: 'subscribed', id: 7, code: undefined },
      { type: 'subscribed', id: 11, code: undefined },
      { type: 'unsubscribed', id: 12, code: undefined },
    ]);
    expect(client.frames.find((frame: Frame) => frame.id === 11)?.prefetch).toBe(3);
  });

  it('a second unsubscribe, or a credit, sent right behind an unsubscribe finds no subscription', async () => {
    const server = await serveHolding();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());
    const subscribed = await client.request({
      type: 'subscribe',
      id: 1,
      queue: 'jobs',
      prefetch: 1,
    });
    expect(subscribed.type).toBe('subscribed');

    client.send({ type: 'unsubscribe', id: 2, subscription: 1 });
    client.send({ type: 'unsubscribe', id: 3, subscription: 1 });
    client.send({ type: 'credit', id: 4, subscription: 1, prefetch: 2 });
    client.send({ type: 'subscribe', id: 1, queue: 'jobs', prefetch: 1 });
    await client.next((frame) => frame.id === 1 && frame !== subscribed);

    expect(client.frames.find((frame: Frame) => frame.id === 2)?.type).toBe('unsubscribed');
    for (const id of [3, 4]) {
      expect(client.frames.find((frame: Frame) => frame.id === id)).toMatchObject({
        type: 'error',
        error: { code: 'INVALID_ARGUMENT', message: 'no subscription 1' },
      });
    }
    expect(
      client.frames.filter((frame: Frame) => frame.id === 1).map((f: Frame) => f.type),
    ).toEqual(['subscribed', 'subscribed']);
  });
});

// The server executes at most 64 frames of one connection at a time (docs/stream.md, Flooding).
// Pausing the socket stops its reads, but one read may hold hundreds of small frames: those
// past the bound must wait for room, not run at once.
describe('a flood of small frames read at once', () => {
  it('runs at most 64 of them at a time and answers every one in order', async () => {
    const framesRead = countFramesRead();
    const server = await serveHolding('execute');
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());
    // Should the test fail holding them, the connection must still close.
    closing.push(async () => server.release());

    server.hold();
    const count = 200;
    const before = framesRead();
    // Sent in one turn: the server, in this process, reads them in a few chunks, hundreds of
    // frames each, and stops reading once 64 are under way; those of a chunk already read wait.
    for (let id = 1; id <= count; id++) {
      client.send({ type: 'batch', id, queue: 'jobs', operations: [{ type: 'stats' }] });
    }
    await until(() => server.counts.started >= 64, {
      what: '64 calls started',
      tries: 250,
      interval: 20,
    });
    // Every frame read has gone as far as it goes without the storage.
    await new Promise((resolve) => setImmediate(resolve));
    expect(framesRead() - before).toBeGreaterThanOrEqual(64);
    expect(server.counts.started).toBe(64);
    server.release();

    await client.next((frame) => frame.id === count, 10_000);
    const ids = client.frames
      .filter((frame: Frame) => frame.type === 'results')
      .map((frame: Frame) => frame.id);
    expect(ids).toEqual(Array.from({ length: count }, (_, index) => index + 1));
    expect(server.counts.most).toBeLessThanOrEqual(64);
  });
});

// Frames the server refuses unread (not JSON, not a frame) are answered in order too, so their
// answers wait behind those of the frames before them: they count among the 64, or a client
// sending them behind one frame that runs long would have the server read and queue them
// without bound.
describe('a flood of refused frames behind a frame that runs long', () => {
  it('stops reading once 64 answers are owed and answers every one in order', async () => {
    const framesRead = countFramesRead();
    const server = await serveHolding('execute');
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());
    closing.push(async () => server.release());

    server.hold();
    const before = framesRead();
    client.send({ type: 'batch', id: 1, queue: 'jobs', operations: [{ type: 'stats' }] });
    await until(() => server.counts.started === 1, {
      what: 'the first call started',
      tries: 250,
      interval: 20,
    });
    // Each is refused (no type) with its id; a few hundred KiB, which the kernel's buffers take
    // whole, so the server reads every one unless it stops reading.
    const count = 20_000;
    for (let id = 2; id <= count; id++) client.send({ id });
    // Read as far as the server reads while the first frame runs: at least the 63 behind it.
    await until(() => framesRead() - before >= 64, {
      what: '64 frames read',
      tries: 250,
      interval: 20,
    });
    let seen = -1;
    while (framesRead() !== seen) {
      seen = framesRead();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // 64 owed, then what was left of the socket read that held the 64th (64 KiB at most).
    expect(framesRead() - before).toBeLessThan(64 + 65_536 / 8);
    server.release();

    await client.next((frame) => frame.id === count, 30_000);
    const answers = client.frames.filter((frame: Frame) => frame.id !== undefined);
    expect(answers.map((frame: Frame) => frame.id)).toEqual(
      Array.from({ length: count }, (_, index) => index + 1),
    );
    expect(answers[0].type).toBe('results');
    expect(answers.slice(1).every((frame: Frame) => frame.error?.code === 'INVALID_ARGUMENT')).toBe(
      true,
    );
  });
});
