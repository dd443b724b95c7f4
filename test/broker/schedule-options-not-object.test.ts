import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { openRemote } from '../../src/client/index.js';
import { ValidationError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';
import type { Queue } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';

/** Options of `queue.schedule` that are no object of options, as a caller may slip them in. */
const NOT_OBJECTS: [string, unknown][] = [
  ['a time zone given as the third argument', 'Europe/Paris'],
  ['null', null],
  ['a number', 5],
  ['true', true],
  ['an array', [{ timezone: 'Europe/Paris' }]],
];

async function expectRefused(queue: Queue): Promise<void> {
  for (const [label, options] of NOT_OBJECTS) {
    const error = await queue
      .schedule('nightly', '0 3 * * *', options as never)
      .catch((caught: unknown) => caught);
    expect(error, label).toBeInstanceOf(ValidationError);
    // One problem, said once: not one unknown option per character of a string.
    expect((error as ValidationError).issues, label).toEqual([
      expect.stringMatching(
        /^schedule options must be an object, as \{ payload, timezone \}, got /,
      ),
    ]);
  }
  // With the other problems of the call, all at once.
  const both = await queue
    .schedule('nightly', 999, 'Europe/Paris' as never)
    .catch((caught: unknown) => caught);
  expect((both as ValidationError).issues).toEqual([
    'schedule options must be an object, as { payload, timezone }, got "Europe/Paris"',
    'every must be an integer of at least 1000 ms, got 999',
  ]);
  expect(await queue.schedules()).toEqual([]);
}

describe('R25 schedule options that are not an object', () => {
  it.each(['memory:', 'sqlite::memory:'])(
    'R25 on %s are refused with a ValidationError and store nothing',
    async (url) => {
      const broker = new EngineBroker(await openEngine(url), {
        clock: new ManualClock(Date.UTC(2026, 11, 4)),
      });
      try {
        const queue = await broker.queue('reports');
        await expectRefused(queue);
        // An object of options is taken as ever.
        expect(
          await queue.schedule('nightly', '0 3 * * *', { timezone: 'Europe/Paris' }),
        ).toMatchObject({ name: 'nightly', timezone: 'Europe/Paris' });
      } finally {
        await broker.close();
      }
    },
  );

  describe('through the remote client', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ clock: new ManualClock(Date.UTC(2026, 11, 4)) });
    });
    afterAll(async () => {
      await server.close();
    });

    it.each(['stream', 'http'] as const)(
      'R25 over %s are refused before anything is sent, and store nothing',
      async (transport) => {
        const client = await openRemote(server.baseUrl, { transport });
        try {
          await expectRefused(await client.queue(`reports-${transport}`));
        } finally {
          await client.close();
        }
      },
    );
  });
});

describe('scheduler options that are not known', () => {
  it('a misspelt option is a ValidationError naming it, not a loop at the default interval', async () => {
    const broker = new EngineBroker(await openEngine('memory:'));
    try {
      const error = (() => {
        try {
          broker.scheduler({ interval: 60_000 } as never);
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues).toEqual([
        'unknown scheduler option "interval": the option is intervalMs',
      ]);
      // Every problem at once, a value shown as it was given.
      expect(() => broker.scheduler({ intervalMs: '5000', every: 1 } as never)).toThrow(
        'unknown scheduler option "every": the option is intervalMs; intervalMs must be an integer ≥ 1 (ms between passes), got "5000"',
      );
      expect(broker.scheduler({ intervalMs: 60_000 })).toBeDefined();
    } finally {
      await broker.close();
    }
  });
});
