import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Broker,
  build,
  type Operation,
  open,
  parseOperation,
  SessionClosedError,
  ValidationError,
} from '../../src/index.js';
import { startTestServer } from '../server/helpers.js';
import { temporaryDirectory } from '../temporary-directory.js';

const dir = temporaryDirectory('leaseq-execute-');
const closing: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const brokers: Record<string, () => Promise<Broker>> = {
  memory: () => open('memory:'),
  sqlite: () => open(`sqlite:${join(dir, 'execute.db')}`),
  remote: async () => {
    const server = await startTestServer();
    closing.push(() => server.close());
    return open(server.baseUrl);
  },
};

/** What a caller could write, typed as an Operation but never parsed. */
const handMade = (value: unknown) => value as Operation;

describe.each(Object.keys(brokers))('execute on %s: operations made by hand', (kind) => {
  it('R20 are checked as at every other door: a bad one answers alone with a ValidationError and changes nothing', async () => {
    const broker = await (brokers[kind] as () => Promise<Broker>)();
    closing.push(() => broker.close());
    const queue = await broker.queue(`hand-${Date.now()}`);
    const outcomes = await queue.execute([
      handMade({
        type: 'publish',
        jobs: [{ id: 'z', payload: 1, delay: 0, priority: 99, group: undefined }],
      }),
      handMade({ type: 'publish', jobs: [{ id: '' }] }),
      handMade({ type: 'nope' }),
      handMade({ type: 'publish', jobs: [{ id: 'fine', payload: 2 }] }),
      build.publish({ id: 'built' }),
    ]);
    expect(outcomes.slice(0, 3).map((outcome) => outcome.ok)).toEqual([false, false, false]);
    for (const outcome of outcomes.slice(0, 3)) {
      expect(outcome.ok ? undefined : outcome.error).toBeInstanceOf(ValidationError);
    }
    expect(outcomes.slice(3)).toEqual([
      { ok: true, value: [{ id: 'fine', duplicate: false }] },
      { ok: true, value: [{ id: 'built', duplicate: false }] },
    ]);
    // The queue works on: the refused job was never stored to break it.
    const taken = await queue.receive({ max: 5 });
    expect(taken.map((delivery) => delivery.id)).toEqual(['fine', 'built']);
    expect(await queue.stats()).toMatchObject({ ready: 0, active: 2 });
  });

  it('R20 a hole in a batch answers alone with a ValidationError, as undefined would; the rest run', async () => {
    const broker = await (brokers[kind] as () => Promise<Broker>)();
    closing.push(() => broker.close());
    const queue = await broker.queue(`hole-${Date.now()}`);
    // [publish a, , publish c]: every, some, forEach and map pass over a hole.
    const operations: Operation[] = [build.publish({ id: 'a' })];
    operations[2] = build.publish({ id: 'c' });
    const outcomes = await queue.execute(operations);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, true]);
    expect(outcomes[1]).toMatchObject({ ok: false, error: expect.any(ValidationError) });
    expect(await queue.stats()).toMatchObject({ ready: 2 });
  });

  it('R20 a batch that is not an array is refused whole; a parsed operation runs as it is', async () => {
    const broker = await (brokers[kind] as () => Promise<Broker>)();
    closing.push(() => broker.close());
    const queue = await broker.queue(`whole-${Date.now()}`);
    await expect(queue.execute('x' as unknown as Operation[])).rejects.toBeInstanceOf(
      ValidationError,
    );
    const [stats] = await queue.execute([parseOperation({ type: 'stats' })]);
    expect(stats).toMatchObject({ ok: true, value: { ready: 0 } });
    if (kind === 'sqlite') {
      await expect(
        broker.transaction(5 as unknown as Parameters<Broker['transaction']>[0]),
      ).rejects.toThrow(/transaction takes a function/);
    }
  });
});

describe.each(Object.keys(brokers))('a session ended under a waiting receive on %s', (kind) => {
  it('R16 refuses that receive with SessionClosedError when the session closes, not after its wait', async () => {
    const broker = await (brokers[kind] as () => Promise<Broker>)();
    closing.push(() => broker.close());
    const queue = await broker.queue(`session-${Date.now()}`);
    const session = await queue.openSession();
    const started = Date.now();
    const receiving = queue.receive({ session, wait: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await queue.closeSession(session);
    await expect(receiving).rejects.toBeInstanceOf(SessionClosedError);
    expect(Date.now() - started).toBeLessThan(2000);
    // Timed out (no heartbeat) rather than closed: the same, once its timeout passes.
    const short = await queue.openSession({ timeout: 200 });
    const since = Date.now();
    await expect(queue.receive({ session: short, wait: 5000 })).rejects.toBeInstanceOf(
      SessionClosedError,
    );
    expect(Date.now() - since).toBeLessThan(2000);
  });
});

describe.each(Object.keys(brokers))("a receive's own options on %s", (kind) => {
  it('a wait or signal of the wrong kind is a ValidationError naming what was given, a job ready or not', async () => {
    const broker = await (brokers[kind] as () => Promise<Broker>)();
    closing.push(() => broker.close());
    const queue = await broker.queue(`options-${Date.now()}`);
    for (const ready of [false, true]) {
      if (ready) await queue.publish({ id: 'a' });
      await expect(queue.receive({ wait: '10' as unknown as number })).rejects.toThrow(
        'wait must be an integer ≥ 0 (ms), got "10"',
      );
      for (const wait of [0, 10]) {
        const refused = queue.receive({ wait, signal: 'x' as unknown as AbortSignal });
        await expect(refused).rejects.toBeInstanceOf(ValidationError);
        await expect(refused).rejects.toThrow('signal must be an AbortSignal, got "x"');
      }
    }
    expect(await queue.stats()).toMatchObject({ ready: 1, active: 0 });
  });
});
