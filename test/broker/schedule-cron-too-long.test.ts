import { afterEach, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { MAX_CRON_LENGTH } from '../../src/broker/schedule-times.js';
import { ValidationError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';

// R25: a cron expression is at most MAX_CRON_LENGTH characters. Longer text is no cron anyone
// writes; stored, it would be in every list of the queue's schedules, and echoed in full by the
// error that refuses it.

const T0 = Date.UTC(2026, 11, 7, 12);
const list = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, at) => from + at).join(',');
/** Every value of all six fields, one by one: the longest cron with a meaning of its own. */
const EVERY_VALUE = [
  list(0, 59),
  list(0, 59),
  list(0, 23),
  list(1, 31),
  list(1, 12),
  list(0, 6),
].join(' ');
/** Five fields, padded past the bound with spaces the fields are split on. */
const TOO_LONG = `0 3 * * ${' '.repeat(MAX_CRON_LENGTH)}*`;

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('R25 the length of a cron expression', () => {
  it('R25 takes the longest cron with a meaning, and refuses longer text without echoing it', async () => {
    expect(EVERY_VALUE.length).toBeLessThan(MAX_CRON_LENGTH);
    const broker = new EngineBroker(await openEngine('memory:'), { clock: new ManualClock(T0) });
    try {
      const queue = await broker.queue('reports');
      await queue.schedule('busy', EVERY_VALUE);
      const error = await queue.schedule('padded', TOO_LONG).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues).toEqual([
        `cron must be at most ${MAX_CRON_LENGTH} characters, got ${TOO_LONG.length} starting ${JSON.stringify(TOO_LONG.slice(0, 40))}`,
      ]);
      expect((await queue.schedules()).map((view) => view.name)).toEqual(['busy']);
    } finally {
      await broker.close();
    }
  });

  it('R25 counts a cron in UTF-16 code units, says so, and shows no half character', async () => {
    const broker = new EngineBroker(await openEngine('memory:'), { clock: new ManualClock(T0) });
    try {
      const queue = await broker.queue('reports');
      // 601 characters, 1201 code units: the 40th unit is the first half of an emoji.
      const emoji = `0${'\u{1F600}'.repeat(600)}`;
      const error = await queue.schedule('smiles', emoji).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues).toEqual([
        `cron must be at most ${MAX_CRON_LENGTH} characters, got 1201 (in UTF-16 code units, where an emoji counts two: 601 characters) starting ${JSON.stringify(emoji.slice(0, 39))}`,
      ]);
      expect((error as ValidationError).message).not.toContain('\\ud83d');
      expect(await queue.schedules()).toEqual([]);
    } finally {
      await broker.close();
    }
  });

  it('R25 refuses it over HTTP with 400, storing nothing', async () => {
    server = await startTestServer();
    const queue = await server.broker.queue('reports');
    const refused = await call(server.baseUrl, 'PUT', '/v1/queues/reports/schedules/padded', {
      body: { cron: `${'0 '.repeat(600)}*` },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_ARGUMENT');
    expect(refused.body.error.message).toContain(
      `cron must be at most ${MAX_CRON_LENGTH} characters, got 1201`,
    );
    expect(await queue.schedules()).toEqual([]);
  });
});
