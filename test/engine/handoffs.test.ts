import { describe, expect, it } from 'vitest';
import { build, type Delivery } from '../../src/core/index.js';
import { BatchContext } from '../../src/engine/sql/executor.js';
import { Handoffs } from '../../src/engine/sql/handoffs.js';
import type { QueueOps } from '../../src/engine/sql/queue-ops.js';

/**
 * A publish's transaction reserves for the receivers waiting in this process. Its reserve is a
 * round trip on PostgreSQL, and the receiver may stop waiting meanwhile (woken by something
 * else, its wait over): what was reserved for it must still reach it, with the commit.
 */
function delivery(token: number): Delivery {
  return {
    token,
    id: `job-${token}`,
    payload: null,
    deadline: 1_000,
    deliveryCount: 1,
    redelivered: false,
  };
}

/** QueueOps of one queue with a ready job, whose reserve answers when the test says. */
function slowOps() {
  let answer!: (deliveries: Delivery[]) => void;
  const reserving = new Promise<Delivery[]>((resolve) => {
    answer = resolve;
  });
  let started!: () => void;
  const reserveStarted = new Promise<void>((resolve) => {
    started = resolve;
  });
  const ops = {
    q: { name: 'jobs', ready: 1 },
    reserve: () => {
      started();
      return reserving;
    },
  } as unknown as QueueOps;
  return { ops, answer, reserveStarted };
}

describe('R32: handoffs to waiting receivers', () => {
  it('a receiver that stops waiting while its job is being reserved still gets it, with the commit', async () => {
    const handoffs = new Handoffs();
    const stop = new AbortController();
    const handed = handoffs.wait('jobs', build.reserve({ max: 1 }), stop.signal);
    let answered: Delivery[] | undefined;
    void handed.then((deliveries) => {
      answered = deliveries;
    });
    const { ops, answer, reserveStarted } = slowOps();
    const batch = new BatchContext('durable');
    const serving = handoffs.serve(ops, 1, batch);
    await reserveStarted;
    stop.abort();
    await Promise.resolve();
    // Held by the transaction: not answered empty while its reservation may still come.
    expect(answered).toBeUndefined();
    answer([delivery(7)]);
    await serving;
    expect(answered).toBeUndefined();
    batch.committed();
    expect(await handed).toEqual([delivery(7)]);
    expect(handoffs.waiting()).toBe(false);
  });

  it('when the reserve finds nothing, a receiver that stopped meanwhile is answered empty; one still waiting waits on', async () => {
    const handoffs = new Handoffs();
    const stopped = new AbortController();
    const waitingOn = new AbortController();
    const first = handoffs.wait('jobs', build.reserve({ max: 1 }), stopped.signal);
    void handoffs.wait('jobs', build.reserve({ max: 1 }), waitingOn.signal);
    const one = slowOps();
    const batch = new BatchContext('durable');
    const serving = handoffs.serve(one.ops, 1, batch);
    await one.reserveStarted;
    stopped.abort();
    one.answer([]);
    // The second receiver's reserve (the same slow ops) answers nothing as well.
    await serving;
    expect(await first).toEqual([]);
    expect(handoffs.waiting()).toBe(true);
    waitingOn.abort();
    expect(handoffs.waiting()).toBe(false);
  });

  it('a transaction rolled back lets its receiver go on waiting, or ends it if it stopped', async () => {
    const handoffs = new Handoffs();
    const stop = new AbortController();
    const handed = handoffs.wait('jobs', build.reserve({ max: 1 }), stop.signal);
    const { ops, answer, reserveStarted } = slowOps();
    const batch = new BatchContext('durable');
    const serving = handoffs.serve(ops, 1, batch);
    await reserveStarted;
    answer([delivery(3)]);
    await serving;
    batch.rolledBack();
    expect(handoffs.waiting()).toBe(true);
    stop.abort();
    expect(await handed).toEqual([]);
    expect(handoffs.waiting()).toBe(false);
  });
});
