import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Queue, ReceiveOptions } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { Subscription } from '../../src/server/stream/subscription.js';
import type { DeliveriesFrame } from '../../src/wire/index.js';
import { until } from '../until.js';

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

describe('a subscription whose connection is backed up', () => {
  it('R33 pushes nothing, not even the first frame of a receive that waited while the buffer filled, and gives it back unworked', async () => {
    const broker = await open('memory:');
    closing.push(() => broker.close());
    const real = await broker.queue('jobs', { visibility: 60_000 });
    // Resolves once the subscription waits in its receive, the queue being empty.
    let parked!: () => void;
    const waiting = new Promise<void>((resolve) => {
      parked = resolve;
    });
    const queue: Queue = Object.assign(Object.create(real), {
      receive: (options: ReceiveOptions) => {
        const received = real.receive(options);
        parked();
        return received;
      },
    });
    // The connection's side: what is pushed, and whether its unsent bytes are past the bound.
    let backedUp = false;
    const pushed: DeliveriesFrame[] = [];
    const subscription = new Subscription(
      {
        id: 1,
        queue,
        prefetch: 10,
        maxBatch: 100,
        maxFrameBytes: 1024 * 1024,
        visibility: undefined,
        session: undefined,
        sessionCheckMs: 15_000,
        signer: { receipt: (token, id) => `${token}:${id}`, sessionHandle: (id) => id },
        log: pino({ level: 'silent' }),
      },
      {
        push: (frame) => {
          pushed.push(frame);
          return true;
        },
        backedUp: () => backedUp,
        // The only subscription of its connection: no other waits for a turn.
        mayPush: () => !backedUp,
        passed: () => {},
        ended: () => {},
        now: () => Date.now(),
      },
    );
    closing.push(() => subscription.close());
    await waiting;

    // Another subscription's pushes fill the buffer while this one waits for a job.
    backedUp = true;
    await real.publish({ id: 'a' });
    await until(async () => pushed.length > 0 || (await real.stats()).unworked > 0, {
      what: 'a push, or the job given back',
    });
    expect(pushed).toEqual([]);
    expect(await real.stats()).toMatchObject({ ready: 1, active: 0, unworked: 1 });

    // Drained: the job is pushed, as one delivery.
    backedUp = false;
    subscription.wake();
    await until(() => pushed.length > 0, { what: 'a push' });
    expect(pushed.flatMap((frame) => frame.deliveries.map((delivery) => delivery.id))).toEqual([
      'a',
    ]);
    expect(await real.stats()).toMatchObject({ ready: 0, active: 1 });
  });
});
