import { expect, it } from 'vitest';
import { Gate, type Harness } from '../../src/testing/index.js';
import { type JobContext, WorkerClosingError } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/**
 * A process of concurrency 2: the handler of the job `stop` closes the worker with `timeout`
 * once the other job has started too, awaiting the close or not (`awaited`), and records when
 * the close resolved; the other jobs wait at a gate (honouring their signal).
 */
function closingFromInside(h: Harness, awaited: boolean, timeout: number) {
  const gate = new Gate();
  const events: string[] = [];
  const contexts = new Map<string, JobContext>();
  let bothStarted!: () => void;
  const started = new Promise<void>((resolve) => {
    bothStarted = resolve;
  });
  const consumer = h.process(
    async (job, ctx) => {
      contexts.set(job.id, ctx);
      if (contexts.size === 2) bothStarted();
      await started;
      if (job.id !== 'stop') {
        await gate.pass(ctx.signal);
        return;
      }
      const closing = consumer.worker.close({ timeout }).then(() => {
        events.push('close resolved');
      });
      if (awaited) await closing;
    },
    { concurrency: 2 },
  );
  consumer.worker.on('closed', () => events.push('closed'));
  const receives = () => consumer.faults.calls.filter((call) => call.op === 'receive').length;
  return { consumer, gate, events, contexts, receives };
}

describeEngines(engines, 'close() from inside one of its handlers', (open) => {
  it('not awaited: fetching stops, the calling job is acked, the others finish, then it closes', async () => {
    const h = await open();
    const { consumer, gate, events, contexts, receives } = closingFromInside(h, false, 5000);
    await h.queue.publishBatch([{ id: 'stop' }, { id: 'b' }, { id: 'c' }]);
    await consumer.worker.start();
    await gate.arrivedAt(1);
    await h.flush();
    const receivedBeforeClose = receives();
    // The calling job is acked by its handler's result while b still runs.
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'stop', outcome: 'acked' });
    await h.advance(1000, { step: 250 });
    expect(consumer.worker.state).toBe('closing');
    expect(events).toEqual([]);
    gate.open();
    await h.flush();
    expect(events).toEqual(['closed', 'close resolved']);
    expect(consumer.worker.state).toBe('closed');
    expect(consumer.outcomes.map((record) => [record.id, record.outcome])).toEqual([
      ['stop', 'acked'],
      ['b', 'acked'],
    ]);
    expect(contexts.get('b')?.signal.aborted).toBe(false);
    // No receive after the close: c was never fetched and is still ready.
    expect(receives()).toBe(receivedBeforeClose);
    expect([...contexts.keys()].sort()).toEqual(['b', 'stop']);
    const state = await h.queue.inspect();
    expect(state.ready).toEqual(['c']);
    expect(state.active).toEqual([]);
  });

  it('not awaited by the only job in hand: the job is acked and the close resolves', async () => {
    const h = await open();
    const events: string[] = [];
    const consumer = h.process((_job, _ctx) => {
      void consumer.worker.close({ timeout: 5000 }).then(() => events.push('close resolved'));
    });
    consumer.worker.on('closed', () => events.push('closed'));
    await h.queue.publishBatch([{ id: 'stop' }, { id: 'next' }]);
    expect(await consumer.worker.runOnce()).toBe(1);
    await h.flush();
    expect(events).toEqual(['closed', 'close resolved']);
    expect(consumer.outcomes).toMatchObject([{ id: 'stop', outcome: 'acked' }]);
    expect((await h.queue.inspect()).ready).toEqual(['next']);
  });

  it('awaited: waits for its own handler until the timeout, which releases its job', async () => {
    const h = await open();
    const { consumer, gate, events, contexts } = closingFromInside(h, true, 500);
    await h.queue.publishBatch([{ id: 'stop' }, { id: 'b' }]);
    expect(await consumer.worker.runOnce()).toBe(2);
    await gate.arrivedAt(1);
    // The other job finishes and is acked; the close still waits for the calling handler.
    gate.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'b', outcome: 'acked' });
    await h.advance(499);
    expect(events).toEqual([]);
    expect(consumer.worker.state).toBe('closing');
    expect(consumer.outcomes).toHaveLength(1);
    await h.advance(1);
    await h.flush();
    // The timeout released the calling job, then the close ended and resolved in its handler.
    expect(events).toEqual(['closed', 'close resolved']);
    expect(contexts.get('stop')?.signal.reason).toBeInstanceOf(WorkerClosingError);
    expect(consumer.outcomes.map((record) => [record.id, record.outcome])).toEqual([
      ['b', 'acked'],
      ['stop', 'released'],
    ]);
    expect((await h.queue.inspect()).ready).toEqual(['stop']);
    // Released at once for redelivery: the next worker gets it as its second delivery.
    const next = h.process((_job, ctx) => {
      expect(ctx.deliveryCount).toBe(2);
    });
    expect(await next.worker.runOnce()).toBe(1);
    expect(await next.nextOutcome()).toMatchObject({ id: 'stop', outcome: 'acked' });
  });
});
