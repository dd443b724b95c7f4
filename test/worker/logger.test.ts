import { expect, it } from 'vitest';
import { Gate, Harness, ManualClock } from '../../src/testing/index.js';
import { jsonLogger, silentLogger } from '../../src/worker/index.js';

it('jsonLogger writes one JSON object per line: level, time, msg, then the fields', () => {
  const lines: string[] = [];
  const clock = new ManualClock(1234);
  const logger = jsonLogger({ clock, write: (line) => lines.push(line) });
  logger.info({ id: 'a', token: 7 }, 'job acked');
  logger.warn({ id: 'b' }, 'job retried');
  logger.error({}, 'worker fetch failed');
  expect(lines.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(
    true,
  );
  expect(lines.map((line) => JSON.parse(line))).toEqual([
    { level: 'info', time: 1234, msg: 'job acked', id: 'a', token: 7 },
    { level: 'warn', time: 1234, msg: 'job retried', id: 'b' },
    { level: 'error', time: 1234, msg: 'worker fetch failed' },
  ]);
});

it('jsonLogger without a clock leaves the time out; an unserialisable field does not throw', () => {
  const lines: string[] = [];
  const logger = jsonLogger({ write: (line) => lines.push(line) });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  logger.info({ cyclic }, 'odd');
  logger.info({ n: 1 }, 'plain');
  expect(lines.map((line) => JSON.parse(line))).toEqual([
    { level: 'info', msg: 'odd', cyclic: '[unserialisable]' },
    { level: 'info', msg: 'plain', n: 1 },
  ]);
});

it('jsonLogger writes the rest of a line whose fields cannot all be written: a cycle, a BigInt, a throwing toJSON', () => {
  const lines: string[] = [];
  const logger = jsonLogger({ write: (line) => lines.push(line) });
  const cyclic: Record<string, unknown> = { step: 3 };
  cyclic.self = cyclic;
  const refusing = {
    toJSON() {
      throw new Error('no');
    },
  };
  const fields = JSON.parse('{"__proto__": "kept"}') as Record<string, unknown>;
  Object.assign(fields, { queue: 'jobs', id: 'a', progress: cyclic, size: 10n, refusing });
  logger.warn(fields, 'job lease-lost');
  expect(lines).toHaveLength(1);
  const line = JSON.parse(lines[0] as string) as Record<string, unknown>;
  expect(Object.entries(line)).toEqual([
    ['level', 'warn'],
    ['msg', 'job lease-lost'],
    ['__proto__', 'kept'],
    ['queue', 'jobs'],
    ['id', 'a'],
    ['progress', '[unserialisable]'],
    ['size', '[unserialisable]'],
    ['refusing', '[unserialisable]'],
  ]);
});

it('silentLogger logs nothing', () => {
  expect(() => silentLogger.error({ any: 'thing' }, 'nothing')).not.toThrow();
});

it('the lease-lost line of a job whose last progress cannot be written as JSON keeps its job and outcome', async () => {
  const h = await Harness.open({ queueOptions: { visibility: 1000 } });
  const lines: string[] = [];
  const gate = new Gate();
  const cyclic: Record<string, unknown> = { step: 3 };
  cyclic.self = cyclic;
  try {
    const consumer = h.process(
      async (_job, ctx) => {
        ctx.progress(cyclic);
        await gate.pass(ctx.signal);
      },
      { renew: 'never', logger: jsonLogger({ write: (line) => lines.push(line) }) },
    );
    await h.queue.publish({ id: 'a' });
    expect(await consumer.worker.runOnce()).toBe(1);
    await gate.arrivedAt(1);
    await h.advance(1000);
    expect(await consumer.nextOutcome()).toMatchObject({
      outcome: 'lease-lost',
      reason: 'expired',
    });
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'job lease-lost',
        queue: h.queue.name,
        id: 'a',
        outcome: 'lease-lost',
        reason: 'expired',
        progress: '[unserialisable]',
      }),
    ]);
  } finally {
    gate.open();
    await h.close();
  }
});
