import { expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { type JsonLoggerOptions, jsonLogger } from '../../src/worker/index.js';

it.each([
  [null, 'jsonLogger: options must be an object, got null'],
  ['warn', 'jsonLogger: options must be an object, got "warn"'],
  [[], 'jsonLogger: options must be an object, got an array'],
])('jsonLogger refuses the options %j, which are not an object', (options, message) => {
  const make = () => jsonLogger(options as JsonLoggerOptions);
  expect(make).toThrow(ValidationError);
  expect(make).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message }));
});

it('jsonLogger refuses an unknown option, a write that is not a function and a clock without now, all at once, and writes with what it takes', () => {
  let thrown: unknown;
  try {
    jsonLogger({ levl: 'warn', write: 'stderr', clock: {}, level: 'debug' } as never);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ValidationError);
  expect((thrown as ValidationError).issues).toEqual([
    'jsonLogger: unknown option "levl"',
    'jsonLogger: write must be a function, got "stderr"',
    'jsonLogger: clock must have now(), got object',
    "jsonLogger: level must be one of 'info', 'warn', 'error', got \"debug\"",
  ]);
  // The options it takes still write.
  const lines: string[] = [];
  const logger = jsonLogger({
    write: (line) => lines.push(line),
    clock: { now: () => 7, sleep: async () => {} },
    level: 'warn',
  });
  logger.info({}, 'dropped');
  logger.warn({ id: 'a' }, 'kept');
  expect(lines.map((line) => JSON.parse(line))).toEqual([
    { level: 'warn', time: 7, msg: 'kept', id: 'a' },
  ]);
});
