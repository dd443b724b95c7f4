import { expect, it } from 'vitest';
import { Gate } from '../../src/testing/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'endSessions of a process whose first session already ended', (open) => {
  it('R16 ends the sessions still open, counts only them, and skips the one that ended', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process((_job, ctx) => gate.pass(ctx.signal), {
      session: { timeout: 3000 },
      visibility: 60_000,
      renew: 'never',
    });
    await h.queue.publish({ id: 'a' });
    await consumer.worker.start();
    await gate.arrivedAt(1);
    // An operator closes the session under the worker, which hears of it at its next heartbeat.
    const first = (await h.queue.inspect()).active[0]?.session as string;
    expect(await h.queue.closeSession(first)).toBe(1);
    expect(await consumer.worker.heartbeatOnce()).toBe('ended');
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', reason: 'session-ended' });
    // The job comes back under the worker's second session.
    await gate.arrivedAt(2);
    const second = (await h.queue.inspect()).active[0]?.session;
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(await consumer.faults.endSessions()).toBe(1);
    const after = await h.queue.stats();
    expect(after).toMatchObject({ sessions: 0, active: 0, ready: 1 });
    expect(await consumer.faults.endSessions()).toBe(0);
    gate.open();
  });
});
