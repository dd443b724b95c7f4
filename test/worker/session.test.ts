import { expect, it } from 'vitest';
import { Gate, type Harness } from '../../src/testing/index.js';
import type { JobContext, WorkerOptions } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/** A process whose handler records its context and waits at a gate, honouring its signal. */
function gated(h: Harness, options: WorkerOptions) {
  const contexts: JobContext[] = [];
  const gate = new Gate();
  const consumer = h.process(async (_job, ctx) => {
    contexts.push(ctx);
    await gate.pass(ctx.signal);
  }, options);
  return { consumer, contexts, gate };
}

/**
 * A started process holding job `a` under a session of 3000 ms, with a lease far longer than
 * the session (never renewed): only the session's end can end it early.
 */
async function heldUnderSession(h: Harness) {
  const held = gated(h, { session: { timeout: 3000 }, visibility: 60_000, renew: 'never' });
  await h.queue.publish({ id: 'a' });
  await held.consumer.worker.start();
  await held.gate.arrivedAt(1);
  const first = (await h.queue.inspect()).active[0]?.session;
  return { ...held, first };
}

describeEngines(engines, 'consumer sessions', (open) => {
  it('receives under its session and keeps it alive with heartbeats (R16)', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(() => gate.pass(), { session: { timeout: 3000 } });
    await h.queue.publish({ id: 'a' });
    await consumer.worker.start();
    await gate.arrivedAt(1);
    const [active] = (await h.queue.inspect()).active;
    expect(active?.session).toBeDefined();
    await h.advance(10_000, { step: 250 });
    expect((await h.queue.stats()).sessions).toBe(1);
    expect(await consumer.worker.heartbeatOnce()).toBe('beat');
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ outcome: 'acked' });
    await consumer.worker.close();
    expect((await h.queue.stats()).sessions).toBe(0);
  });

  it('a session ended under the worker loses its jobs at once; the worker opens a new one', async () => {
    const h = await open();
    const { consumer, contexts, gate } = gated(h, { session: { timeout: 3000 } });
    await h.queue.publish({ id: 'a' });
    await consumer.worker.start();
    await gate.arrivedAt(1);
    const firstSession = (await h.queue.inspect()).active[0]?.session;
    expect(await consumer.faults.endSessions()).toBe(1);
    expect(await consumer.worker.heartbeatOnce()).toBe('ended');
    expect(contexts[0]?.signal.reason).toMatchObject({
      code: 'LEASE_LOST',
      reason: 'session-ended',
    });
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'a',
      token: 1,
      outcome: 'lease-lost',
      reason: 'session-ended',
    });
    // Released at once by the session's end, the job comes back to this worker's new session.
    await gate.arrivedAt(2);
    expect(contexts[1]).toMatchObject({ id: 'a', token: 2, deliveryCount: 2, redelivered: true });
    const secondSession = (await h.queue.inspect()).active[0]?.session;
    expect(secondSession).toBeDefined();
    expect(secondSession).not.toBe(firstSession);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', token: 2, outcome: 'acked' });
  });

  it.each(['error', 'hang'] as const)(
    'heartbeats that fail (%s) past the session timeout: the worker counts its session ended, as the broker does, and opens a new one',
    async (mode) => {
      const h = await open();
      const { consumer, contexts, gate, first } = await heldUnderSession(h);
      expect(first).toBeDefined();
      consumer.faults.failHeartbeats({ mode });
      await h.advance(2900, { step: 100 });
      expect(contexts[0]?.signal.aborted).toBe(false);
      // The broker ends the session 3000 ms after its last heartbeat (R16); the worker no later.
      await h.advance(200, { step: 100 });
      const sessions = (await h.queue.inspect()).active.map((delivery) => delivery.session);
      expect(sessions).not.toContain(first);
      expect(contexts[0]?.signal.reason).toMatchObject({
        code: 'LEASE_LOST',
        reason: 'session-ended',
      });
      expect(await consumer.nextOutcome()).toMatchObject({
        id: 'a',
        outcome: 'lease-lost',
        reason: 'session-ended',
      });
      consumer.faults.heal();
      // The job, released with the session, comes back under a new one.
      await h.advance(1000, { step: 100 });
      await gate.arrivedAt(2);
      expect(contexts[1]).toMatchObject({ id: 'a', token: 2 });
      gate.open();
      expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', token: 2, outcome: 'acked' });
    },
  );

  it('a heartbeat the broker heard, whose answer is read only after the next wake-up (a blocked event loop), keeps the session', async () => {
    const h = await open();
    const { consumer, contexts, gate, first } = await heldUnderSession(h);
    // The heartbeat at 1000 reaches the broker; its answer waits unread.
    consumer.faults.failHeartbeats({ mode: 'late', count: 1 });
    await h.advance(2900, { step: 100 });
    setImmediate(() => consumer.faults.heal());
    h.clock.set(3000);
    consumer.follow(3000);
    await h.flush();
    expect(contexts[0]?.signal.aborted).toBe(false);
    expect((await h.queue.inspect()).active.map((delivery) => delivery.session)).toEqual([first]);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', token: 1, outcome: 'acked' });
  });

  it('a session whose open was answered late (a client reconnecting to a restarted server) is heartbeaten, not counted ended at once', async () => {
    const h = await open();
    const { consumer, contexts, gate } = gated(h, {
      session: { timeout: 3000 },
      visibility: 60_000,
      renew: 'never',
    });
    // The open waits in the client (its reconnect backoff) and reaches the broker at 2900.
    const faults = consumer.faults;
    const openSession = faults.openSession.bind(faults);
    let send = () => {};
    const sent = new Promise<void>((resolve) => {
      send = resolve;
    });
    faults.openSession = async (options) => {
      await sent;
      return openSession(options);
    };
    await h.queue.publish({ id: 'a' });
    await consumer.worker.start();
    await h.advance(2900, { step: 100 });
    send();
    await gate.arrivedAt(1);
    const [held] = (await h.queue.inspect()).active;
    // The broker keeps the session until 5900 without a heartbeat; the worker heartbeats it.
    await h.advance(1000, { step: 100 });
    expect(contexts[0]?.signal.aborted).toBe(false);
    expect((await h.queue.inspect()).active.map((delivery) => delivery.session)).toEqual([
      held?.session,
    ]);
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', token: 1, outcome: 'acked' });
  });

  it('a process paused past its session timeout counts the session ended as it resumes, without waiting for a heartbeat that gets no answer', async () => {
    const h = await open();
    const { consumer, contexts } = await heldUnderSession(h);
    consumer.pause();
    // The broker ends the session 3000 ms after its last heartbeat (R16) and hands the job out.
    await h.advance(4000, { step: 100 });
    expect((await h.queue.stats()).sessions).toBe(0);
    const [again] = await h.queue.receive();
    expect(again).toMatchObject({ id: 'a', token: 2 });
    // Resumed with its link silent (a heartbeat is never answered): no answer for a whole
    // timeout came in before the pause, so the queue has ended the session already.
    consumer.faults.failHeartbeats({ mode: 'hang' });
    consumer.resume();
    await h.flush();
    expect(contexts[0]?.signal.reason).toMatchObject({
      code: 'LEASE_LOST',
      reason: 'session-ended',
    });
    expect(await consumer.nextOutcome()).toMatchObject({
      id: 'a',
      token: 1,
      outcome: 'lease-lost',
      reason: 'session-ended',
    });
    consumer.faults.heal();
    await h.queue.ack(again?.token as number);
  });

  it('a paused process misses its heartbeats: the broker ends its session and redelivers', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(() => gate.pass(), { session: { timeout: 3000 }, renew: 'never' });
    await h.queue.publish({ id: 'a' });
    await consumer.worker.runOnce();
    await gate.arrivedAt(1);
    consumer.pause();
    await h.advance(3000);
    expect((await h.queue.stats()).sessions).toBe(0);
    const [again] = await h.queue.receive();
    expect(again).toMatchObject({ id: 'a', deliveryCount: 2 });
    consumer.resume();
    gate.open();
    await h.flush();
    // Its late ack is refused: the lease had already ended.
    expect(consumer.outcomes).toMatchObject([{ outcome: 'lease-lost' }]);
    expect(consumer.worker.metrics().leasesLost).toBe(1);
  });
});
