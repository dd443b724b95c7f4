import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RemoteBroker } from '../../src/client/index.js';
import { ValidationError } from '../../src/core/index.js';
import { ManualClock, open } from '../../src/index.js';
import { temporaryDirectory } from '../temporary-directory.js';

const dir = temporaryDirectory('leaseq-open-options-');

async function refusal(url: string, options: object): Promise<ValidationError> {
  const error = await open(url, options as never).then(
    async (broker) => {
      await broker.close();
      return undefined;
    },
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
  return error as ValidationError;
}

describe('open(url, options): every option is one open reads for that URL', () => {
  it('a misspelt option is refused, not dropped for its default, and nothing is created', async () => {
    const file = join(dir, 'typo.db');
    expect((await refusal(`sqlite:${file}`, { durabilty: 'os' })).issues).toEqual([
      'unknown option "durabilty" of open',
    ]);
    expect((await refusal(`sqlite:${file}`, { busyTimeout: 100, clock: 1 })).issues).toEqual([
      'unknown option "busyTimeout" of open',
    ]);
    expect((await refusal('memory:', { totallyUnknown: undefined })).issues).toEqual([
      'unknown option "totallyUnknown" of open',
    ]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a bad value of any storage option is refused before the database is created', async () => {
    const file = join(dir, 'bad-value.db');
    for (const [options, issue] of [
      [{ clockMode: 'bogus' }, "clockMode must be 'strict' or 'follow', got \"bogus\""],
      [{ durability: 'always' }, "durability must be 'fsync' or 'os', got \"always\""],
      [{ busyTimeoutMs: -1 }, 'busyTimeoutMs must be an integer ≥ 0, got -1'],
      [{ syncOnThreadPool: 'yes' }, 'syncOnThreadPool must be true or false, got "yes"'],
      [{ clock: 1 }, 'clock must be a Clock (now() and sleep()), got 1'],
    ] as const) {
      expect((await refusal(`sqlite:${file}`, options)).message).toBe(issue);
    }
    await refusal('memory:', { clockMode: 'bogus' });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('an option of the other kind of URL is refused: a server keeps its own storage settings', async () => {
    expect((await refusal('memory:', { apiKey: 'k', transport: 'http' })).issues).toEqual([
      'option apiKey applies to a server URL (http://…), not to storage',
      'option transport applies to a server URL (http://…), not to storage',
    ]);
    expect((await refusal('http://127.0.0.1:7700', { durability: 'os' })).issues).toEqual([
      "option durability applies to storage opened in-process, not to a server URL (the server's own settings hold there)",
    ]);
    expect((await refusal('http://127.0.0.1:7700', { syncOnThreadPool: true })).issues).toEqual([
      "option syncOnThreadPool applies to storage opened in-process, not to a server URL (the server's own settings hold there)",
    ]);
    await refusal('memory:', [] as never);
  });

  it('a SQLite option is refused for memory: and PostgreSQL, before anything is opened', async () => {
    expect((await refusal('memory:', { durability: 'fsync' })).issues).toEqual([
      'option durability applies to SQLite storage (sqlite:…), not to memory:',
    ]);
    expect((await refusal('memory:', { busyTimeoutMs: 5, syncOnThreadPool: true })).issues).toEqual(
      [
        'option busyTimeoutMs applies to SQLite storage (sqlite:…), not to memory:',
        'option syncOnThreadPool applies to SQLite storage (sqlite:…), not to memory:',
      ],
    );
    // Refused before a connection is tried: no server listens on port 1.
    expect(
      (await refusal('postgres://nobody@127.0.0.1:1/none', { durability: 'os' })).issues,
    ).toEqual(['option durability applies to SQLite storage (sqlite:…), not to PostgreSQL']);
    // Not given (undefined) is not refused, and clockMode is every engine's.
    await (await open('memory:', { durability: undefined, clockMode: 'strict' })).close();
  });

  it('a bad value of a server option is refused at open, not taken to fail every call later', async () => {
    const url = 'http://127.0.0.1:7700';
    expect(
      (
        await refusal(url, {
          timeoutMs: -1,
          transport: 'carrier-pigeon' as never,
          maxWaitPerRequestMs: 0,
          maxBatch: 0,
          maxReceipts: 1.5,
          prefetchIdleMs: -5,
          apiKey: 5 as never,
          fetch: 'curl' as never,
        })
      ).issues,
    ).toEqual([
      'apiKey must be a non-empty string, got 5',
      `transport must be 'stream' or 'http', got "carrier-pigeon"`,
      'fetch must be a fetch function, got "curl"',
      'timeoutMs must be an integer of at least 1, got -1',
      'maxWaitPerRequestMs must be an integer of at least 1, got 0',
      'maxBatch must be an integer of at least 1, got 0',
      'maxReceipts must be an integer of at least 1, got 1.5',
      'prefetchIdleMs must be an integer of at least 0, got -5',
    ]);
    expect((await refusal(url, { timeoutMs: 'abc' as never })).issues).toEqual([
      'timeoutMs must be an integer of at least 1, got "abc"',
    ]);
    expect(() => new RemoteBroker(url, { retries: 3 } as never)).toThrow(
      /unknown option "retries"/,
    );
    const fine = await open(url, { timeoutMs: 1, prefetchIdleMs: 0, transport: 'http' });
    await fine.close();
  });

  it('an API key no Authorization header can carry is refused at open, unshown, not taken for a server that cannot be reached', async () => {
    const url = 'http://127.0.0.1:7700';
    const keys: [string, string][] = [
      ['secret-key-of-a-file\n', 'it has a line break (read from a file with its newline?)'],
      ['secret\u0000key', 'it has a control character'],
      ['secret key', 'it has a space'],
      ['geheimer-schlüssel', 'it has a character outside ASCII'],
    ];
    for (const transport of ['http', 'stream'] as const) {
      for (const [apiKey, problem] of keys) {
        const error = await refusal(url, { apiKey, transport });
        expect(error.issues).toEqual([
          `apiKey is not an API key: ${problem}; a key is printable ASCII without spaces (letters, digits and punctuation)`,
        ]);
        expect(error.message).not.toContain('secret');
      }
    }
    const fine = await open(url, { apiKey: 'printable!ASCII~key', transport: 'http' });
    await fine.close();
  });

  it('options left undefined are not given, and the known ones are taken', async () => {
    const memory = await open('memory:', { apiKey: undefined, clock: new ManualClock(5) });
    const q = await memory.queue('clocked');
    await q.publish({ id: 'a' });
    // The job was published at the given clock's time.
    expect((await q.job('a'))?.publishedAt).toBe(5);
    await memory.close();
    const remote = await open('http://127.0.0.1:7700', { durability: undefined, apiKey: 'k' });
    await remote.close();
    const sqlite = await open(`sqlite:${join(dir, 'ok.db')}`, {
      durability: 'os',
      busyTimeoutMs: 100,
      syncOnThreadPool: true,
    });
    await sqlite.close();
  });
});
