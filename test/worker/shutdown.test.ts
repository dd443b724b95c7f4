import { afterEach, expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { ClosedError, ValidationError } from '../../src/core/index.js';
import { Gate, type Harness, silentLogger } from '../../src/testing/index.js';
import {
  type CloseOnSignalsOptions,
  closeOnSignals,
  type JobContext,
  Worker,
  WorkerClosingError,
  type WorkerOptions,
} from '../../src/worker/index.js';
import { GIVE_BACK_WAIT_MS } from '../../src/worker/worker.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

/** A started process whose handlers wait at a gate (honouring their signal). */
async function busy(h: Harness, ids: string[], options: WorkerOptions = {}) {
  const gate = new Gate();
  const contexts = new Map<string, JobContext>();
  const consumer = h.process(
    async (job, ctx) => {
      contexts.set(job.id, ctx);
      await gate.pass(ctx.signal);
    },
    { concurrency: ids.length || 1, ...options },
  );
  if (ids.length > 0) await h.queue.publishBatch(ids.map((id) => ({ id })));
  await consumer.worker.start();
  await gate.arrivedAt(ids.length);
  const settles = () =>
    consumer.faults.calls.filter((call) => call.op !== 'receive' && call.op !== 'extend');
  return { consumer, gate, contexts, settles };
}

describeEngines(engines, 'shutdown', (open) => {
  it('close() of an idle worker ends its pending long wait at once', async () => {
    const h = await open();
    const { consumer } = await busy(h, []);
    await h.flush();
    expect(consumer.faults.calls.map((call) => [call.op, call.result])).toEqual([
      ['receive', undefined],
    ]);
    await consumer.worker.close();
    expect(consumer.worker.state).toBe('closed');
    expect(consumer.faults.calls.map((call) => [call.op, call.result])).toEqual([['receive', []]]);
  });

  it('jobs that finish within the timeout are acked, and nothing more is fetched', async () => {
    const h = await open();
    const { consumer, gate } = await busy(h, ['a', 'b']);
    await h.queue.publish({ id: 'c' });
    let closed = false;
    const closing = consumer.worker.close({ timeout: 5000 }).then(() => {
      closed = true;
    });
    await h.advance(3000, { step: 250 });
    expect(closed).toBe(false);
    gate.open();
    await closing;
    expect(consumer.outcomes.map((record) => [record.id, record.outcome])).toEqual([
      ['a', 'acked'],
      ['b', 'acked'],
    ]);
    expect((await h.queue.inspect()).ready).toEqual(['c']);
  });

  it('jobs still running at the timeout are released for immediate redelivery, signals fired', async () => {
    const h = await open();
    const { consumer, gate, contexts, settles } = await busy(h, ['a']);
    const closing = consumer.worker.close({ timeout: 500 });
    await h.advance(499);
    expect(contexts.get('a')?.signal.aborted).toBe(false);
    await h.advance(1);
    await closing;
    const signal = contexts.get('a')?.signal;
    expect(signal?.reason).toBeInstanceOf(WorkerClosingError);
    expect(signal?.reason).toMatchObject({ code: 'WORKER_CLOSING' });
    expect(consumer.outcomes).toMatchObject([{ id: 'a', outcome: 'released', reason: 'shutdown' }]);
    expect(settles()).toEqual([{ op: 'nack', token: 1, fate: 'sent', result: true }]);
    // Redelivered at once (time 500), not after the lease (1000).
    expect(await h.queue.receive()).toMatchObject([{ id: 'a', token: 2, deliveryCount: 2 }]);
    gate.open();
    await h.flush();
    expect(settles()).toHaveLength(1);
    expect(consumer.worker.metrics().outcomes.released).toBe(1);
  });

  it('jobs released at close go back to the front of ready in the order they were reserved (R12)', async () => {
    const h = await open();
    const { consumer } = await busy(h, ['h1', 'h2', 'h3']);
    await h.queue.publish({ id: 'h4' });
    await consumer.worker.close({ timeout: 0 });
    expect(consumer.outcomes.map((record) => record.outcome)).toEqual([
      'released',
      'released',
      'released',
    ]);
    expect((await h.queue.inspect()).ready).toEqual(['h1', 'h2', 'h3', 'h4']);
  });

  it('leases are still renewed while jobs finish during a grace period longer than the lease', async () => {
    const h = await open();
    const { consumer, gate } = await busy(h, ['a']);
    const closing = consumer.worker.close({ timeout: 10_000 });
    await h.advance(5000, { step: 250 });
    gate.open();
    await closing;
    expect(consumer.outcomes).toMatchObject([{ id: 'a', outcome: 'acked' }]);
    // Renewed at 750, 1500, 2250, 3000, 3750 and 4500.
    expect(consumer.worker.metrics().renewals).toBe(6);
  });

  it('close({ timeout: 0 }) releases at once; a later shorter close cuts a longer grace', async () => {
    const h = await open();
    const first = await busy(h, ['a']);
    await first.consumer.worker.close({ timeout: 0 });
    expect(first.consumer.outcomes).toMatchObject([{ outcome: 'released' }]);

    const gate = new Gate();
    const second = h.process((_job, ctx) => gate.pass(ctx.signal));
    await second.worker.runOnce();
    await gate.arrivedAt(1);
    const closing = second.worker.close({ timeout: 60_000 });
    await h.advance(100);
    const again = second.worker.close({ timeout: 0 });
    expect(again).toBe(closing);
    await closing;
    expect(second.outcomes).toMatchObject([{ id: 'a', outcome: 'released' }]);
  });

  it('a closed worker refuses to fetch; close validates its timeout', async () => {
    const h = await open();
    const consumer = h.process(async () => {});
    await expect(consumer.worker.close({ timeout: -1 })).rejects.toBeInstanceOf(ValidationError);
    // A misplaced or misspelt timeout is not the default of 30 s; a string is shown as one.
    for (const bad of [null, 5, { timeot: 10 }]) {
      await expect(consumer.worker.close(bad as never)).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(consumer.worker.close({ timeout: '5' as never })).rejects.toThrow('got "5"');
    // None of them began a close.
    expect(consumer.worker.state).not.toBe('closing');
    await consumer.worker.close();
    await expect(consumer.worker.runOnce()).rejects.toBeInstanceOf(ClosedError);
    await expect(consumer.worker.start()).rejects.toMatchObject({ code: 'CLOSED' });
    await consumer.worker.close();
  });

  it('a release at the last delivery dead-letters the job (R13 counts every return)', async () => {
    const h = await open({ queueOptions: { visibility: 1000, maxDeliveries: 1 } });
    const { consumer } = await busy(h, ['a']);
    await consumer.worker.close({ timeout: 0 });
    expect(consumer.outcomes).toMatchObject([{ outcome: 'released' }]);
    expect(await h.queue.deadLetters()).toMatchObject([{ id: 'a', reason: 'max-deliveries' }]);
  });
});

describeEngines(engines.slice(0, 1), 'closeOnSignals', (open) => {
  const removals: (() => void)[] = [];
  afterEach(() => {
    for (const remove of removals.splice(0)) remove();
  });

  it('SIGTERM closes the worker gracefully; the removal takes the listeners away', async () => {
    const h = await open();
    const { consumer, gate } = await busy(h, ['a']);
    const before = process.listenerCount('SIGTERM');
    const beforeInt = process.listenerCount('SIGINT');
    let closed: unknown = 'not yet';
    const remove = closeOnSignals(consumer.worker, {
      timeout: 5000,
      onClosed: (error) => {
        closed = error;
      },
    });
    removals.push(remove);
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    process.emit('SIGTERM');
    expect(consumer.worker.state).toBe('closing');
    await h.advance(1000, { step: 250 });
    gate.open();
    await h.flush();
    expect(closed).toBeUndefined();
    expect(consumer.outcomes).toMatchObject([{ outcome: 'acked' }]);
    remove();
    expect(process.listenerCount('SIGTERM')).toBe(before);
    expect(process.listenerCount('SIGINT')).toBe(beforeInt);
  });

  it('bad options are a ValidationError at once, before any listener is installed', async () => {
    const h = await open();
    const { consumer } = await busy(h, ['a']);
    const before = process.listenerCount('SIGTERM');
    const bad: unknown[] = [
      { timeout: 20_000.5 },
      { timeout: -1 },
      { timeout: Number.NaN },
      { signals: [] },
      { signals: ['TERM'] },
      { signals: ['SIGTERM', 'SIGKILL'] },
      { signals: ['SIGFOO'] },
      { onClosed: 'close' },
      { timeot: 5000 },
      null,
    ];
    for (const options of bad) {
      expect(() => closeOnSignals(consumer.worker, options as CloseOnSignalsOptions)).toThrow(
        ValidationError,
      );
    }
    expect(process.listenerCount('SIGTERM')).toBe(before);
    expect(consumer.worker.state).toBe('running');
  });

  it('a signal named twice is one signal: its first delivery closes gracefully', async () => {
    const h = await open();
    const { consumer, gate } = await busy(h, ['a']);
    const before = process.listenerCount('SIGTERM');
    removals.push(
      closeOnSignals(consumer.worker, { signals: ['SIGTERM', 'SIGTERM'], timeout: 5000 }),
    );
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    process.emit('SIGTERM');
    expect(consumer.worker.state).toBe('closing');
    await h.advance(500, { step: 250 });
    gate.open();
    await h.flush();
    expect(consumer.outcomes).toMatchObject([{ outcome: 'acked' }]);
  });

  it('a second signal releases the remaining jobs at once', async () => {
    const h = await open();
    const { consumer } = await busy(h, ['a']);
    let closed = false;
    removals.push(
      closeOnSignals(consumer.worker, {
        signals: ['SIGTERM', 'SIGINT'],
        timeout: 60_000,
        onClosed: () => {
          closed = true;
        },
      }),
    );
    process.emit('SIGTERM');
    await h.advance(100);
    expect(closed).toBe(false);
    process.emit('SIGINT');
    await h.flush();
    expect(closed).toBe(true);
    expect(consumer.outcomes).toMatchObject([{ outcome: 'released' }]);
  });
});

/**
 * A started process whose close begins as the receive that took its first jobs answers: their
 * handlers never start. Resolves once that close is done.
 */
async function closedAsReceiveAnswers(h: Harness, concurrency: number) {
  const consumer = h.process(async () => {}, { concurrency });
  const faults = consumer.faults;
  const receive = faults.receive.bind(faults);
  let closing: Promise<void> | undefined;
  faults.receive = async (options) => {
    const deliveries = await receive(options);
    if (deliveries.length > 0) closing ??= consumer.worker.close();
    return deliveries;
  };
  await consumer.worker.start();
  await h.flush();
  await closing;
  return { consumer, faults };
}

describeEngines(engines, 'shutdown, jobs reserved as it begins', (open) => {
  it('R33 a job reserved while the worker closes goes back unworked: not counted as a delivery', async () => {
    const h = await open();
    await h.queue.publish({ id: 'a' });
    const { consumer, faults } = await closedAsReceiveAnswers(h, 1);
    expect(consumer.outcomes).toMatchObject([{ id: 'a', outcome: 'released' }]);
    expect(faults.calls.filter((call) => call.op === 'nack')).toEqual([
      { op: 'nack', token: 1, fate: 'sent', result: true },
    ]);
    expect(await h.queue.job('a')).toMatchObject({ state: 'ready', deliveryCount: 0, history: [] });
  });

  it('R33 jobs reserved while the worker closes go back in the order they were reserved (R12)', async () => {
    const h = await open();
    await h.queue.publishBatch(['a', 'b', 'c', 'd'].map((id) => ({ id })));
    const { consumer } = await closedAsReceiveAnswers(h, 3);
    expect(consumer.outcomes.map((record) => record.outcome)).toEqual([
      'released',
      'released',
      'released',
    ]);
    expect((await h.queue.inspect()).ready).toEqual(['a', 'b', 'c', 'd']);
  });

  it('close() waits at most GIVE_BACK_WAIT_MS for give-backs that get no answer; their jobs go back at their lease end', async () => {
    const h = await open();
    // A storage (or server) that takes the give-back and never answers it.
    const hung: Queue = Object.create(h.queue, {
      nack: { value: () => new Promise<boolean>(() => {}) },
    });
    const gate = new Gate();
    const worker = new Worker(hung, (_job, ctx) => gate.pass(ctx.signal), {
      clock: h.clock,
      logger: silentLogger,
      visibility: 30_000,
    });
    await h.queue.publish({ id: 'a' });
    await worker.start();
    await gate.arrivedAt(1);
    let closed = false;
    const closing = worker.close({ timeout: 0 }).then(() => {
      closed = true;
    });
    await h.advance(GIVE_BACK_WAIT_MS - 1, { step: 100 });
    expect(closed).toBe(false);
    await h.advance(1);
    await closing;
    expect(worker.state).toBe('closed');
    // Nothing lost: the job is still leased, and delivered again once its lease ended.
    expect(await h.queue.job('a')).toMatchObject({ state: 'active', deadline: 30_000 });
    await h.advance(30_000, { step: 1000 });
    const [again] = await h.queue.receive();
    expect(again).toMatchObject({ id: 'a', deliveryCount: 2 });
  });
});
