import { expect, it } from 'vitest';
import { ManualClock } from '../../src/testing/index.js';
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
    { level: 'error', msg: 'log line could not be serialised' },
    { level: 'info', msg: 'plain', n: 1 },
  ]);
});

it('silentLogger logs nothing', () => {
  expect(() => silentLogger.error({ any: 'thing' }, 'nothing')).not.toThrow();
});
