import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq, type Run } from './context.js';

// A value of the command line that the client or the server refuses (a ValidationError) is a
// mistake in the command line, exit code 2, as when the CLI finds it itself; nothing is done. A
// refusal caused by anything else (a line of a file, a stored setting, one receipt) is not.

const MAX_VISIBILITY = 60_000;
const MAX_DELAY = 60_000;
const MAX_BATCH = 10;

let server: TestServer;
let env: Record<string, string>;
let dir: string;
let counter = 0;
const fresh = () => `refused${++counter}`;
const run = (argv: string[]) => leaseq(argv, { env });

beforeAll(async () => {
  server = await startTestServer({
    limits: { maxVisibilityMs: MAX_VISIBILITY, maxDelayMs: MAX_DELAY, maxBatch: MAX_BATCH },
  });
  env = { LEASEQ_SERVER: server.baseUrl };
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-refused-'));
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Exit code 2, the refusal said as a usage error is, with the pointer to --help. */
function usageError(said: RegExp | string, command: string) {
  return {
    code: 2,
    stdout: '',
    stderr: expect.stringMatching(
      new RegExp(
        `^leaseq ${command}: .*${typeof said === 'string' ? said : said.source}.*\\nsee leaseq ${command} --help\\n$`,
      ),
    ),
  };
}

async function created(): Promise<string> {
  const name = fresh();
  expect((await run(['queue', 'create', name])).code).toBe(0);
  return name;
}

async function stats(name: string) {
  return (await server.broker.queue(name)).stats();
}

async function receipt(name: string): Promise<string> {
  await run(['publish', name, '{}']);
  const received: Run = await run(['receive', name, '--json']);
  return JSON.parse(received.stdout)[0].receipt;
}

describe('values of the command line refused by the client or the server', () => {
  it('exits 2 for queue options, names and ids the server refuses, creating nothing', async () => {
    const name = fresh();
    const over = String(MAX_VISIBILITY + 1);
    expect(await run(['queue', 'create', name, '--visibility', over])).toEqual(
      usageError("INVALID_ARGUMENT: .*this server's maxVisibilityMs", 'queue create'),
    );
    expect(await run(['queue', 'create', 'bad!name'])).toEqual(
      usageError('INVALID_ARGUMENT: queue name must be', 'queue create'),
    );
    const listed = JSON.parse((await run(['queue', 'list', '--json'])).stdout);
    expect(listed.map((queue: { name: string }) => queue.name)).not.toContain(name);
    const queue = await created();
    expect(await run(['queue', 'update', queue, '--visibility', over])).toEqual(
      usageError('maxVisibilityMs', 'queue update'),
    );
    expect(await run(['queue', 'stats', 'bad!name'])).toEqual(
      usageError('queue name must be', 'queue stats'),
    );
    expect(await run(['queue', 'move', queue, '--to', 'bad!name'])).toEqual(
      usageError('INVALID_ARGUMENT: to must be a queue name', 'queue move'),
    );
    expect(await run(['job', queue, 'x'.repeat(300)])).toEqual(
      usageError('INVALID_ARGUMENT: id must be', 'job'),
    );
    expect(await run(['schedule', 'set', queue, 's', '--cron', 'nope'])).toEqual(
      usageError('INVALID_ARGUMENT: cron "nope"', 'schedule set'),
    );
    await expect((await server.broker.queue(queue)).options()).resolves.toMatchObject({
      visibility: 30_000,
    });
  });

  for (const transport of ['stream', 'http']) {
    it(`exits 2 for a --visibility, --delay or --batch-size above the server limit, doing nothing (${transport})`, async () => {
      const t = ['--transport', transport];
      const name = await created();
      expect(
        await run(['receive', name, '--visibility', String(MAX_VISIBILITY + 1), ...t]),
      ).toEqual(
        usageError("visibility must be at most 60000 ms, got 60001 \\(this server's", 'receive'),
      );
      expect(await run(['publish', name, '1', '--delay', String(MAX_DELAY + 1), ...t])).toEqual(
        usageError('INVALID_ARGUMENT: jobs\\[0\\]\\.delay must be at most', 'publish'),
      );
      expect(await run(['receive', 'bad!name', ...t])).toEqual(
        usageError('queue name must be', 'receive'),
      );
      const file = join(dir, `jobs-${transport}.jsonl`);
      writeFileSync(
        file,
        `${Array.from({ length: 30 }, (_, n) => `{"payload":${n}}`).join('\n')}\n`,
      );
      expect(await run(['publish', name, '--file', file, '--batch-size', '11', ...t])).toEqual(
        usageError(
          "--batch-size must be at most 10 \\(this server's maxBatch\\), got 11",
          'publish',
        ),
      );
      expect(await stats(name)).toMatchObject({ ready: 0, delayed: 0, published: 0 });

      // One receipt or many: the flag is refused once, before any of them.
      const [first, second] = [await receipt(name), await receipt(name)] as [string, string];
      expect(
        await run([
          'extend',
          name,
          first,
          second,
          '--visibility',
          String(MAX_VISIBILITY + 1),
          ...t,
        ]),
      ).toEqual(
        usageError(
          "--visibility must be at most 60000 \\(this server's maxVisibilityMs\\)",
          'extend',
        ),
      );
      expect(
        await run(['nack', name, first, second, '--delay', String(MAX_DELAY + 1), ...t]),
      ).toEqual(usageError("--delay must be at most 60000 \\(this server's maxDelayMs\\)", 'nack'));
      expect(
        await run(['nack', name, first, '--dead', '--reason', 'r'.repeat(2000), ...t]),
      ).toEqual(usageError('INVALID_ARGUMENT: reason must be', 'nack'));
      expect(await run(['ack', 'bad!name', first, ...t])).toEqual(
        usageError('queue name must be', 'ack'),
      );
      expect(await run(['cancel', 'bad!name', 'a', ...t])).toEqual(
        usageError('queue name must be', 'cancel'),
      );
      // Both deliveries are still live, as they were: nothing was nacked, extended or acked.
      expect(await stats(name)).toMatchObject({ active: 2, nacks: 0, acks: 0, extensions: 0 });
    });
  }

  it('exits 2 for dead redrive --batch-size above maxBatch and an id no job can have, redriving nothing', async () => {
    const name = await created();
    for (let n = 0; n < 12; n++) await run(['publish', name, '--id', `d${n}`, '{}']);
    const queue = await server.broker.queue(name);
    await queue.execute(
      Array.from(
        { length: 12 },
        (_, n) => ({ type: 'cancel', id: `d${n}`, remove: false }) as const,
      ),
    );
    expect(await run(['dead', 'redrive', name, '--batch-size', '11'])).toEqual(
      usageError("--batch-size must be at most 10 \\(this server's maxBatch\\)", 'dead redrive'),
    );
    expect(await run(['dead', 'redrive', name, 'd0', 'x'.repeat(300)])).toEqual(
      usageError('INVALID_ARGUMENT: ', 'dead redrive'),
    );
    expect(await stats(name)).toMatchObject({ dead: 12, ready: 0 });
    expect(await run(['dead', 'redrive', name, '--batch-size', '10'])).toMatchObject({ code: 0 });
    expect(await stats(name)).toMatchObject({ dead: 0, ready: 12 });
  });
});

describe('refusals not caused by the command line', () => {
  it('exits 1 for a line of a file the server refuses', async () => {
    const name = await created();
    const file = join(dir, 'late.jsonl');
    writeFileSync(file, `{"payload":1}\n{"payload":2,"delay":${MAX_DELAY + 1}}\n`);
    const published = await run(['publish', name, '--file', file]);
    expect(published.code).toBe(1);
    expect(published.stderr).toMatch(/^leaseq publish: lines 1–2 were not published .*line 2/);
    expect(published.stderr).not.toContain('--help');
  });

  it('exits 1 for a receive without --visibility refused for the lease its queue has', async () => {
    const name = fresh();
    // Made where the server limit does not reach: in the storage itself.
    await server.broker.queue(name, { visibility: MAX_VISIBILITY + 1 });
    await run(['publish', name, '{}']);
    const received = await run(['receive', name]);
    expect(received).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(
        /^leaseq receive: INVALID_ARGUMENT: visibility: queue .* leases for 60001 ms/,
      ),
    });
    expect(received.stderr).not.toContain('--help');
    // Named on the command line within the limit, it is taken.
    expect((await run(['receive', name, '--visibility', '1000'])).code).toBe(0);
  });

  it('exits 1 for each receipt or id refused on its own, the others done', async () => {
    const name = await created();
    const good = await receipt(name);
    const acked = await run(['ack', name, good, 'not-a-receipt']);
    expect(acked.code).toBe(1);
    expect(acked.stderr).toContain('not acked not-a-receipt…: INVALID_RECEIPT');
    const cancelled = await run(['cancel', name, 'x'.repeat(300)]);
    expect(cancelled.code).toBe(1);
    expect(cancelled.stderr).toContain('INVALID_ARGUMENT');
  });
});
