import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Queue } from '../../src/broker/index.js';
import type { Operation } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { StreamMetrics } from '../../src/server/metrics.js';
import { call, withWrappedQueues } from '../server/helpers.js';
import { until } from '../until.js';
import { FrameClient } from './frames.js';

// A batch frame whose reserves took jobs for a connection that closed before their answer went
// out (the reserves were still running, or their answer waited behind the answers of the frames
// before it) has an answer that can never go out: what they took goes back at once, unworked
// (R33), rather than stay leased, to nobody, until a deadline that may be hours away.

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closing.splice(0).reverse()) await close();
});

describe('a reserve frame running when its connection closes', () => {
  it('R33 gives back what it reserved at once, unworked, when its answer cannot go out', async () => {
    const real = await open('memory:');
    // Option reads wait while held: a reserve naming no visibility reads the queue's lease.
    let held: Promise<void> | undefined;
    let release = () => {};
    let optionsAsked = () => {};
    const asked = new Promise<void>((resolve) => {
      optionsAsked = resolve;
    });
    const broker = withWrappedQueues(real, (queue: Queue) =>
      Object.assign(Object.create(queue), {
        options: async () => {
          if (held !== undefined) {
            optionsAsked();
            await held;
          }
          return queue.options();
        },
      }),
    );
    const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
    closing.push(
      () => real.close(),
      () => app.close(),
    );
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    // A lease of an hour: held to its deadline, the job would be out of reach for that long.
    await call(baseUrl, 'PUT', '/v1/queues/jobs', { body: { visibility: 3_600_000 } });
    const jobs = await real.queue('jobs');
    await jobs.publish({ id: 'a' });

    const client = await FrameClient.open(baseUrl);
    held = new Promise((resolve) => {
      release = resolve;
    });
    client.send({ type: 'batch', id: 1, queue: 'jobs', operations: [{ type: 'reserve', max: 1 }] });
    await asked;
    await client.close();
    release();

    // The reserve ran once the connection was gone: its job is ready again, no attempt counted.
    await until(async () => (await jobs.stats()).unworked === 1, {
      what: 'the job given back unworked',
      tries: 250,
      interval: 20,
    });
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 1, unworked: 1 });
    const [again] = await jobs.receive({ max: 1 });
    expect(again).toMatchObject({ id: 'a', deliveryCount: 1, redelivered: false });
  });
});

describe('a reserve answered after its connection closed', () => {
  it('R33 gives back what it reserved when its answer, waiting behind an earlier one, is dropped', async () => {
    const real = await open('memory:');
    // A stats operation waits while held: the frame sent before the reserve is still running.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const broker = withWrappedQueues(real, (queue: Queue) =>
      Object.assign(Object.create(queue), {
        execute: async (operations: readonly Operation[]) => {
          if (operations.some((operation) => operation.type === 'stats')) await held;
          return queue.execute(operations);
        },
      }),
    );
    const app = await createApp({ broker, receiptSecret: 'test-secret-of-at-least-32-characters' });
    closing.push(
      () => real.close(),
      () => app.close(),
    );
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    await call(baseUrl, 'PUT', '/v1/queues/jobs', { body: {} });
    const jobs = await real.queue('jobs');
    await jobs.publish({ id: 'a' });
    const ended = vi.spyOn(StreamMetrics.prototype, 'connectionEnded');
    const operations = vi.spyOn(StreamMetrics.prototype, 'operation');

    const client = await FrameClient.open(baseUrl);
    client.send({ type: 'batch', id: 1, queue: 'jobs', operations: [{ type: 'stats' }] });
    // A lease of an hour: held to its deadline, the job would be out of reach for that long.
    client.send({
      type: 'batch',
      id: 2,
      queue: 'jobs',
      operations: [{ type: 'reserve', max: 1, visibility: 3_600_000 }],
    });
    // The reserve ran and its answer was made while the connection was open.
    await until(async () => operations.mock.calls.some(([type]) => type === 'reserve'), {
      what: 'the reserve to run',
      tries: 250,
      interval: 20,
    });
    expect(await jobs.stats()).toMatchObject({ ready: 0, active: 1 });
    await client.close();
    await until(async () => ended.mock.calls.length === 1, {
      what: 'the connection to end',
      tries: 250,
      interval: 20,
    });
    release();

    await until(async () => (await jobs.stats()).unworked === 1, {
      what: 'the job given back unworked',
      tries: 250,
      interval: 20,
    });
    expect(await jobs.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 1, unworked: 1 });
    const [again] = await jobs.receive({ max: 1 });
    expect(again).toMatchObject({ id: 'a', deliveryCount: 1, redelivered: false });
  });
});
