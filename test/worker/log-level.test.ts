import { expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { Harness } from '../../src/testing/index.js';
import { jsonLogger, type Logger, type LogLevel } from '../../src/worker/index.js';
import { QUEUE } from './engines.js';

it('jsonLogger({ level }) writes that level and above, and says so through isLevelEnabled', () => {
  const lines: string[] = [];
  const logger = jsonLogger({ level: 'warn', write: (line) => lines.push(line) });
  logger.info({ id: 'a' }, 'job acked');
  logger.warn({ id: 'b' }, 'job retried');
  logger.error({ id: 'c' }, 'job dead');
  expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['job retried', 'job dead']);
  expect(
    (['info', 'warn', 'error'] as const).map((level) => logger.isLevelEnabled?.(level)),
  ).toEqual([false, true, true]);
});

it.each(['debug', 'warning', 'WARN', 'toString', '', null, 2])(
  'jsonLogger refuses the level %j with a ValidationError naming the levels',
  (level) => {
    const write = () => {};
    const make = () => jsonLogger({ write, level: level as LogLevel });
    expect(make).toThrow(ValidationError);
    expect(make).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(
          /^jsonLogger: level must be one of 'info', 'warn', 'error', got /,
        ),
      }),
    );
  },
);

it('jsonLogger without a level writes every level', () => {
  const lines: string[] = [];
  const logger = jsonLogger({ write: (line) => lines.push(line), level: undefined });
  logger.info({}, 'a');
  logger.error({}, 'b');
  expect(lines).toHaveLength(2);
});

it('the worker builds no line for a level its logger has off', async () => {
  const h = await Harness.open({ queueOptions: QUEUE });
  const calls: LogLevel[] = [];
  const asked: LogLevel[] = [];
  const line = (level: LogLevel) => () => {
    calls.push(level);
  };
  const logger: Logger = {
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    isLevelEnabled: (level) => {
      asked.push(level);
      return level !== 'info';
    },
  };
  const consumer = h.process(
    async (job) => {
      if (job.id === 'b') throw new Error('boom');
    },
    { logger, concurrency: 2 },
  );
  await h.queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
  await consumer.worker.runOnce();
  await consumer.nextOutcome();
  await consumer.nextOutcome();
  expect(calls).toEqual(['warn']);
  expect(asked.sort()).toEqual(['info', 'warn']);
  await h.close();
});
