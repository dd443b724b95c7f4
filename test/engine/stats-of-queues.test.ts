import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { type Engine, openEngine } from '../../src/engine/index.js';
import { EngineBroker, ManualClock, type QueueStats, ValidationError } from '../../src/index.js';
import { postgresUrl, queueName } from '../conformance/engines.js';
import { temporaryDirectory } from '../temporary-directory.js';

// R17 figures of many queues at once (what /metrics and GET /v1/stats read): each as that
// queue's own stats() answers, read together where the storage can, so that thousands of
// queues do not take a transaction each.
const dir = temporaryDirectory('leaseq-stats-of-queues-');
let files = 0;

/** Each engine as a Broker opens it (following the queues' clocks) and as opened alone (strict). */
const engines: { name: string; sql: boolean; open: () => Promise<Engine> }[] = [
  { name: 'memory', sql: false, open: () => openEngine('memory:') },
  ...(['follow', 'strict'] as const).flatMap((clockMode) => [
    {
      name: `sqlite, ${clockMode} clock`,
      sql: clockMode === 'follow',
      open: () => {
        files += 1;
        return openEngine(`sqlite:${join(dir, `stats-${files}.db`)}`, { clockMode });
      },
    },
    {
      name: `postgres, ${clockMode} clock`,
      sql: clockMode === 'follow',
      open: () => openEngine(postgresUrl(), { clockMode }),
    },
  ]),
];

/** Queues in every state a figure counts, made from 1,000 on; the clock then stands at 1,200. */
async function queuesInEveryState(engine: Engine) {
  const clock = new ManualClock(1_000);
  const broker = new EngineBroker(engine, { clock });
  const names = {
    quiet: queueName('quiet'),
    busy: queueName('busy'),
    due: queueName('due'),
    empty: queueName('empty'),
    paused: queueName('paused'),
  };
  const quiet = await broker.queue(names.quiet, { visibility: 10_000 });
  await quiet.publishBatch([{ id: 'a' }, { id: 'b' }, { id: 'c', delay: 5_000 }]);
  const [first] = await quiet.receive();
  await quiet.nack(first?.token as number, { requeue: false, reason: 'bad input' });
  clock.advance(100);
  await quiet.publish({ id: 'd' });
  const busy = await broker.queue(names.busy, { visibility: 10_000 });
  const session = await busy.openSession({ timeout: 60_000 });
  await busy.publishBatch([{ id: 'x', group: 'g' }, { id: 'y', group: 'g' }, { id: 'z' }]);
  expect(await busy.receive({ session, max: 1 })).toHaveLength(1);
  await busy.ack((await busy.receive())[0]?.token as number);
  // A lease that runs out at 1,150: at 1,200 a step must take it back first.
  const due = await broker.queue(names.due, { visibility: 50 });
  await due.publish({ id: 'late' });
  await due.receive();
  await broker.queue(names.empty);
  const paused = await broker.queue(names.paused);
  await paused.publish({ id: 'p' });
  await broker.updateQueue(names.paused, { paused: true });
  clock.advance(100);
  const done = async () => {
    for (const name of Object.values(names)) await broker.deleteQueue(name);
    await broker.close();
  };
  return { broker, names, done };
}

describe.each(engines)('statsOfQueues on $name', (target) => {
  it('R17 answers each queue as its own stats() does, in the order named, without the unknown', async () => {
    const { broker, names, done } = await queuesInEveryState(await target.open());
    const gone = queueName('gone');
    const asked = [names.paused, names.due, gone, names.quiet, names.empty, names.busy];
    const together = await broker.statsOfQueues(asked);
    expect([...together.keys()]).toEqual(asked.filter((name) => name !== gone));
    const each = new Map<string, QueueStats>();
    for (const name of together.keys()) each.set(name, await broker.handle(name).stats());
    expect(together).toEqual(each);
    // The figures of 1,200: the lease that ran out at 1,150 is back, the oldest ready aged.
    expect(together.get(names.due)).toMatchObject({ ready: 1, active: 0, expiries: 1 });
    expect(together.get(names.quiet)).toMatchObject({
      ready: 2,
      delayed: 1,
      dead: 1,
      oldestReadyAge: 200,
      queueTime: 1_200,
    });
    expect(together.get(names.busy)).toMatchObject({ active: 1, waiting: 1, sessions: 1 });
    expect(together.get(names.paused)).toMatchObject({ paused: true, ready: 1 });
    expect(await broker.statsOfQueues([])).toEqual(new Map());
    await done();
  });

  it('reads together the queues with nothing due; only the others take a step each', async () => {
    const engine = await target.open();
    const { broker, names, done } = await queuesInEveryState(engine);
    const stepped = vi.spyOn(engine, 'handle');
    await broker.statsOfQueues(Object.values(names));
    const steps = stepped.mock.calls.map(([name]) => name).sort();
    // Where it cannot read them together, every queue takes its step, as stats() would.
    expect(steps).toEqual(target.sql ? [names.due] : Object.values(names).sort());
    stepped.mockRestore();
    await done();
  });

  it('R17 R26 a job that dies into a dead-letter queue at the step of its queue is counted there, in any order named', async () => {
    const clock = new ManualClock(1_000);
    const broker = new EngineBroker(await target.open(), { clock });
    const names = {
      end: queueName('end'),
      middle: queueName('middle'),
      source: queueName('source'),
    };
    await broker.queue(names.end);
    // A job that arrives here is past its retention (R30) at once: it goes on to the end.
    await broker.queue(names.middle, { retention: 100, deadLetterQueue: names.end });
    const source = await broker.queue(names.source, {
      visibility: 50,
      maxDeliveries: 1,
      deadLetterQueue: names.middle,
    });
    await source.publish({ id: 'a' });
    await source.receive();
    // Its lease ran out at 1,050: the source's step at 1,200 dead-letters it (R13).
    clock.advance(200);
    const asked = [names.end, names.middle, names.source];
    const together = await broker.statsOfQueues(asked);
    expect(together.get(names.source)).toMatchObject({ active: 0, dead: 0 });
    expect(together.get(names.middle)).toMatchObject({ ready: 0, deadLetters: { expired: 1 } });
    expect(together.get(names.end)).toMatchObject({ ready: 1 });
    const each = new Map<string, QueueStats>();
    for (const name of asked) each.set(name, await broker.handle(name).stats());
    expect(together).toEqual(each);
    for (const name of asked) await broker.deleteQueue(name);
    await broker.close();
  });

  it('a bad name is a ValidationError and reads nothing', async () => {
    const engine = await target.open();
    const broker = new EngineBroker(engine, { clock: new ManualClock(1_000) });
    const read = vi.spyOn(engine, 'handle');
    for (const bad of [[''], ['a'.repeat(300)], [7], 'queue']) {
      await expect(broker.statsOfQueues(bad as string[])).rejects.toBeInstanceOf(ValidationError);
    }
    expect(read).not.toHaveBeenCalled();
    await broker.close();
  });
});
