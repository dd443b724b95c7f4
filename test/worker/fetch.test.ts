import { expect, it } from 'vitest';
import type { Queue } from '../../src/broker/queue.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { open as openBroker } from '../../src/index.js';
import { Gate, silentLogger } from '../../src/testing/index.js';
import { jsonLogger, type OutcomeRecord, Worker, work } from '../../src/worker/index.js';
import { MIN_SETTLING, SETTLING_PER_SLOT } from '../../src/worker/worker.js';
import { until } from '../until.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();

describeEngines(engines, 'fetch loop', (open, engine) => {
  it('never holds more than concurrency jobs and never reserves more than its free slots', async () => {
    const h = await open();
    await h.queue.publishBatch(['a', 'b', 'c', 'd', 'e'].map((id) => ({ id })));
    const gates = new Map<string, Gate>();
    let running = 0;
    let mostRunning = 0;
    const consumer = h.process(
      async (job) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        const gate = new Gate();
        gates.set(job.id, gate);
        await gate.pass();
        running -= 1;
      },
      { concurrency: 2 },
    );
    await consumer.worker.start();
    await h.flush();
    expect([...gates.keys()]).toEqual(['a', 'b']);
    expect(consumer.worker.metrics().inHand).toBe(2);
    gates.get('a')?.open();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
    await h.flush();
    expect([...gates.keys()]).toEqual(['a', 'b', 'c']);
    for (const id of ['b', 'c', 'd', 'e']) {
      await h.flush();
      gates.get(id)?.open();
    }
    const ids = [];
    for (let n = 0; n < 4; n++) ids.push((await consumer.nextOutcome()).id);
    expect(ids.sort()).toEqual(['b', 'c', 'd', 'e']);
    expect(mostRunning).toBe(2);
    const receives = consumer.faults.calls.filter((call) => call.op === 'receive');
    // The last receive was asked while 'e' ran and one slot was free.
    expect(receives.map((call) => call.max)).toEqual([2, 1, 1, 1, 1]);
    expect(receives.map((call) => call.result)).toEqual([[1, 2], [3], [4], [5], undefined]);
  });

  it('waits for work with one long receive, not by polling; a publish wakes it', async () => {
    const h = await open();
    const consumer = h.process(async () => {}, { wait: 20_000 });
    await consumer.worker.start();
    const receives = () => consumer.faults.calls.filter((call) => call.op === 'receive');
    await h.advance(19_000, { step: 1000 });
    expect(receives()).toHaveLength(1);
    await h.queue.publish({ id: 'a' });
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'a', outcome: 'acked' });
    await h.flush();
    expect(receives()).toHaveLength(2);
    // Over the stream the wait is the client's own (a push ends it), timed by its real clock,
    // which the harness does not move; a server's long poll follows the harness's clock.
    if (engine.name === 'stream') return;
    await h.advance(19_999);
    expect(receives()).toHaveLength(2);
    await h.advance(1);
    expect(receives()).toHaveLength(3);
  });

  it('runOnce reserves once for the free slots and returns how many handlers it started', async () => {
    const h = await open();
    const gate = new Gate();
    const consumer = h.process(() => gate.pass(), { concurrency: 3 });
    expect(await consumer.worker.runOnce()).toBe(0);
    await h.queue.publishBatch(['a', 'b'].map((id) => ({ id })));
    expect(await consumer.worker.runOnce()).toBe(2);
    await h.queue.publishBatch(['c', 'd'].map((id) => ({ id })));
    expect(await consumer.worker.runOnce()).toBe(1);
    expect(await consumer.worker.runOnce()).toBe(0);
    const receives = consumer.faults.calls.filter((call) => call.op === 'receive');
    expect(receives.map((call) => call.max)).toEqual([3, 3, 1]);
    gate.open();
    for (let n = 0; n < 3; n++) await consumer.nextOutcome();
    expect((await h.queue.inspect()).ready).toEqual(['d']);
  });

  it('runOnce({ wait }) waits for the first job', async () => {
    const h = await open();
    const consumer = h.process(async () => {});
    const started = consumer.worker.runOnce({ wait: 5000 });
    await h.advance(1000);
    await h.queue.publish({ id: 'a' });
    expect(await started).toBe(1);
  });

  it('work() returns a running worker; state follows its life', async () => {
    const h = await open();
    const outcomes: OutcomeRecord[] = [];
    const worker = await work(h.queue, async () => {}, { clock: h.clock, logger: silentLogger });
    worker.on('outcome', (record) => outcomes.push(record));
    expect(worker.state).toBe('running');
    await h.flush();
    await h.queue.publish({ id: 'a' });
    await h.flush();
    expect(outcomes.map((record) => record.outcome)).toEqual(['acked']);
    const closing = worker.close();
    expect(worker.state).toBe('closing');
    await closing;
    expect(worker.state).toBe('closed');
  });

  it('a failing receive is logged, counted and retried after a growing delay', async () => {
    const h = await open();
    let failures = 2;
    const flaky: Queue = Object.create(h.queue, {
      receive: {
        value: (options: Parameters<Queue['receive']>[0]) => {
          if (failures > 0) {
            failures -= 1;
            return Promise.reject(new StorageUnavailableError('database down'));
          }
          return h.queue.receive(options);
        },
      },
    });
    const errors: string[] = [];
    const lines: unknown[] = [];
    const worker = new Worker(flaky, async () => {}, {
      clock: h.clock,
      logger: jsonLogger({ level: 'error', write: (line) => lines.push(JSON.parse(line)) }),
    });
    worker.on('error', (error, during) => errors.push(`${during}: ${(error as Error).message}`));
    await h.queue.publish({ id: 'a' });
    await worker.start();
    await h.flush();
    expect(errors).toEqual(['fetch: database down']);
    // The line carries the error's code, for alerts that match on it.
    expect(lines).toEqual([
      {
        level: 'error',
        msg: 'worker fetch failed',
        queue: h.queue.name,
        during: 'fetch',
        error: 'database down',
        code: 'STORAGE_UNAVAILABLE',
      },
    ]);
    await h.advance(100);
    expect(errors).toHaveLength(2);
    await h.advance(200);
    expect(worker.metrics()).toMatchObject({ fetchErrors: 2, outcomes: { acked: 1 } });
    await worker.close();
  });

  it('a failing logger or listener does not stop the worker', async () => {
    const h = await open();
    const throwing = () => {
      throw new Error('sink full');
    };
    const consumer = h.process(async () => {}, {
      logger: { info: throwing, warn: throwing, error: throwing },
    });
    consumer.worker.on('outcome', throwing);
    await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
    await consumer.worker.runOnce();
    expect((await consumer.nextOutcome()).outcome).toBe('acked');
    await consumer.worker.runOnce();
    expect((await consumer.nextOutcome()).outcome).toBe('acked');
  });
});

it.each([
  // Where SETTLING_PER_SLOT per slot is fewer, the jobs being settled may still number MIN_SETTLING.
  { concurrency: 2, mostInHand: 2 + MIN_SETTLING },
  // Above it, they are at most SETTLING_PER_SLOT per slot.
  { concurrency: MIN_SETTLING + 4, mostInHand: (1 + SETTLING_PER_SLOT) * (MIN_SETTLING + 4) },
])(
  'starts the next jobs while acks travel; leases in hand stay within $mostInHand at concurrency $concurrency',
  async ({ concurrency, mostInHand }) => {
    const broker = await openBroker('memory:');
    const inner = await broker.queue('acks-on-their-way');
    const ids = Array.from(
      { length: mostInHand + 3 },
      (_, i) => `job-${String(i).padStart(3, '0')}`,
    );
    await inner.publishBatch(ids.map((id) => ({ id })));
    const acks = new Gate();
    const held = (call: () => Promise<unknown>) => acks.pass().then(call);
    const queue = new Proxy(inner, {
      get(target, key) {
        if (key === 'ack') return (token: number) => held(() => target.ack(token));
        if (key === 'ackMany') return (tokens: number[]) => held(() => target.ackMany(tokens));
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const started: string[] = [];
    const worker = await work(queue, async (job) => void started.push(job.id), {
      concurrency,
      logger: silentLogger,
    });
    // Every handler ends at once and its ack is held: the next jobs start without waiting for
    // those answers, up to the bound, and no further.
    await until(() => started.length === mostInHand, {
      what: 'the jobs in hand started',
      tries: 502,
      interval: 2,
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(started).toEqual(ids.slice(0, mostInHand));
    expect(worker.metrics().inHand).toBe(mostInHand);
    expect(await inner.stats()).toMatchObject({ active: mostInHand, ready: 3 });
    acks.open();
    await until(() => worker.metrics().outcomes.acked === ids.length, {
      what: 'every job acked',
      tries: 502,
      interval: 2,
    });
    expect(started).toEqual(ids);
    await worker.close();
    await broker.close();
  },
);
