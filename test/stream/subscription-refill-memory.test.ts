import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { open } from '../../src/index.js';
import { Subscription } from '../../src/server/stream/subscription.js';
import type { DeliveriesFrame } from '../../src/wire/index.js';
import { until } from '../until.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

describe('a subscription refilled with acks, again and again', () => {
  it('keeps nothing of a refill once it is over: what its acks were answered with is collected', async () => {
    const broker = await open('memory:');
    closing.push(() => broker.close());
    const queue = await broker.queue('jobs', { visibility: 600_000 });
    await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    const pushed: DeliveriesFrame[] = [];
    const subscription = new Subscription(
      {
        id: 1,
        queue,
        prefetch: 1,
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
        backedUp: () => false,
        mayPush: () => true,
        passed: () => {},
        ended: () => {},
        now: () => Date.now(),
      },
    );
    closing.push(() => subscription.close());
    await until(() => pushed.length === 1, { what: 'the first push' });
    const [first] = pushed[0]?.deliveries ?? [];
    const token = Number(String(first?.receipt).split(':')[0]);
    // Its credit in use, the subscription waits for room.
    const inside = subscription as unknown as { waitingForRoom: boolean; refilled: Promise<void> };
    await until(() => inside.waitingForRoom, { what: 'the wait for room' });

    // What the answer to the acks' frame resolves with (the connection's send).
    let answer: object | undefined = { frame: 'results' };
    const held = new WeakRef(answer);
    subscription.refill([token], Promise.resolve(answer));
    answer = undefined;
    await inside.refilled;
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    // A race with a promise of the subscription's stop kept a reaction on it, for the
    // subscription's life, for every refill.
    expect(held.deref()).toBeUndefined();
  });
});
