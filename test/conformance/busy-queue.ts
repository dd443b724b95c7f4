import { expect } from 'vitest';
import type { QueueHandle } from '../../src/engine/index.js';
import { view } from './assertions.js';
import type { EngineHarness } from './suite.js';

/** A queue at clock 7 with a job in every state, and an open session. */
export interface BusyQueue {
  queue: QueueHandle;
  /** Open; owns the delivery of `a` (token 1). */
  session: string;
}

/**
 * visibility 5: `d` delayed until 20; `a` active under the session (token 1, deadline 12);
 * `b` active without one (token 2, deadline 12); `c` dead (token 3, rejected); `e` ready.
 */
export async function busyQueue(harness: EngineHarness): Promise<BusyQueue> {
  const queue = await harness.queue({ visibility: 5 });
  await queue.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd', delay: 20 }]);
  const session = await queue.openSession(0);
  await queue.reserve(7, { session });
  await queue.reserve(7, { max: 2 });
  await queue.nack(7, 3, { requeue: false });
  await queue.publish(7, { id: 'e' });
  expect(await queue.inspect()).toEqual(
    view(7, {
      ready: ['e'],
      delayed: [{ id: 'd', availableAt: 20 }],
      active: [
        { token: 1, id: 'a', deadline: 12, deliveryCount: 1, session },
        { token: 2, id: 'b', deadline: 12, deliveryCount: 1 },
      ],
      dead: [{ id: 'c', reason: 'rejected', deliveryCount: 1 }],
    }),
  );
  return { queue, session };
}
