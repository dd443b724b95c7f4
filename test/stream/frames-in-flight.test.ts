import { afterEach, describe, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { call, withWrappedQueues } from '../server/helpers.js';
import { type Frame, FrameClient } from './frames.js';

// The server executes at most 64 frames of one connection at a time (docs/stream.md, Flooding).
// Pausing the socket stops its reads, but one read may hold hundreds of small frames: those
// past the bound must wait for room, not run at once.

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function until(check: () => boolean): Promise<void> {
  for (let tries = 0; tries < 250; tries++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('condition not met in time');
}

/** A server whose queues' executes wait, once `hold()` is called, until `release()`. */
async function serveWithHeldExecutes() {
  const real = await open('memory:');
  let held: Promise<void> | undefined;
  let release = () => {};
  const counts = { started: 0, running: 0, most: 0 };
  const broker = withWrappedQueues(real, (queue: Queue) =>
    Object.assign(Object.create(queue), {
      execute: async (...args: Parameters<Queue['execute']>) => {
        counts.started += 1;
        counts.running += 1;
        counts.most = Math.max(counts.most, counts.running);
        try {
          if (held !== undefined) await held;
          return await queue.execute(...args);
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

describe('a flood of small frames read at once', () => {
  it('runs at most 64 of them at a time and answers every one in order', async () => {
    const server = await serveWithHeldExecutes();
    await call(server.baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    closing.push(() => client.close());
    // Should the test fail holding them, the connection must still close.
    closing.push(async () => server.release());

    server.hold();
    const count = 200;
    // Sent in one turn: the server, in this process, reads them together (one read of ~20 KB).
    for (let id = 1; id <= count; id++) {
      client.send({ type: 'batch', id, queue: 'jobs', operations: [{ type: 'stats' }] });
    }
    await until(() => server.counts.started >= 64);
    // What the frames read so far do without waiting for the storage is done by now.
    await new Promise((resolve) => setTimeout(resolve, 100));
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
