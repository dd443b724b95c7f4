import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Line, LineError, readLines } from '../../src/cli/json-lines.js';
import { runCli } from '../../src/cli/run.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext, leaseq } from './context.js';

// What `leaseq publish` makes of its input lines: bytes that are not UTF-8, long lines, a stop
// while it waits for input, and how a refused line is named on either transport.

let server: TestServer;
let env: Record<string, string>;
let dir: string;
let counter = 0;
const fresh = () => `input${++counter}`;

beforeAll(async () => {
  // A small payload limit, for a payload too large at little cost.
  server = await startTestServer({ limits: { maxPayloadBytes: 1024 } });
  env = { LEASEQ_SERVER: server.baseUrl };
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-input-'));
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function created(): Promise<string> {
  const name = fresh();
  expect((await leaseq(['queue', 'create', name], { env })).code).toBe(0);
  return name;
}

async function ids(name: string): Promise<string[]> {
  const queue = await server.broker.queue(name);
  const view = await queue.inspect();
  return [...view.ready].sort();
}

async function collect(
  chunks: Iterable<string | Buffer> | AsyncIterable<string | Buffer>,
  options: Parameters<typeof readLines>[1] = {},
): Promise<Line[]> {
  const source = (async function* () {
    yield* chunks;
  })();
  const lines: Line[] = [];
  for await (const line of readLines(source, options)) lines.push(line);
  return lines;
}

describe('readLines', () => {
  it('reads UTF-8 split anywhere between chunks, strings too, a mark at the start dropped', async () => {
    const bytes = Buffer.from('\uFEFF{"id":"é€😀"}\n\n  \n"ü"\n{"last":true}');
    // Every byte a chunk of its own: every multi-byte character is split.
    const lines = await collect([...bytes].map((byte) => Buffer.from([byte])));
    expect(lines).toEqual([
      { number: 1, text: '{"id":"é€😀"}' },
      { number: 4, text: '"ü"' },
      { number: 5, text: '{"last":true}' },
    ]);
    expect(await collect(['{"a":', '1}\n', '2\n'])).toEqual([
      { number: 1, text: '{"a":1}' },
      { number: 2, text: '2' },
    ]);
    // A mark later than the start is kept: not JSON, said so by the caller.
    expect(await collect(['1\n\uFEFF2\n'])).toEqual([
      { number: 1, text: '1' },
      { number: 2, text: '\uFEFF2' },
    ]);
  });

  it('refuses bytes that are not UTF-8, naming the line, rather than reading them as U+FFFD', async () => {
    const lines: Line[] = [];
    const read = async () => {
      const source = (async function* () {
        yield Buffer.from('{"id":"a"}\n{"id":"b"}\n{"id":"c');
        yield Buffer.from([0xff]);
        yield Buffer.from('"}\n{"id":"d"}\n');
      })();
      for await (const line of readLines(source)) lines.push(line);
    };
    const error = await read().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LineError);
    expect(error).toMatchObject({ line: 3, message: 'line 3 is not well-formed UTF-8' });
    expect(lines.map((line) => line.number)).toEqual([1, 2]);
    // A truncated sequence at the end of the input, and a lone continuation byte.
    await expect(collect([Buffer.from([0x31, 0x0a, 0xc3])])).rejects.toMatchObject({ line: 2 });
    await expect(collect([Buffer.from([0x0a, 0x0a, 0x80, 0x0a])])).rejects.toMatchObject({
      line: 3,
    });
  });

  it('joins a character split between string chunks, and refuses a lone surrogate by its line', async () => {
    expect(await collect(['{"id":"\uD83D', '\uDE00"}\n'])).toEqual([
      { number: 1, text: '{"id":"😀"}' },
    ]);
    await expect(collect(['1\n{"id":"\uD83D', '"}\n'])).rejects.toMatchObject({
      line: 2,
      message: 'line 2 is not well-formed UTF-8',
    });
    await expect(collect(['1\n2\n\uDE00'])).rejects.toMatchObject({ line: 3 });
    await expect(collect(['1\n\uD83D'])).rejects.toMatchObject({ line: 2 });
  });

  it('is linear in a long line: 16 MiB in 64 KiB chunks well within a second or two', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const count = 256;
    const source = function* () {
      for (let index = 0; index < count; index++) yield chunk;
      yield Buffer.from('\nend\n');
    };
    const started = performance.now();
    const lines = await collect(source());
    const elapsed = performance.now() - started;
    expect(lines.map((line) => line.text.length)).toEqual([count * chunk.length, 3]);
    // Quadratic (the line's text split again at every chunk) it took 10+ s.
    expect(elapsed).toBeLessThan(3000);
  });

  it('refuses a line longer than maxLineBytes, naming it, as soon as it is that long', async () => {
    // At the limit: taken; one byte more: refused, ended or not, within one chunk or across.
    expect(await collect(['12345\n1234567890\n'], { maxLineBytes: 10 })).toHaveLength(2);
    await expect(collect(['12345\n12345678901\n'], { maxLineBytes: 10 })).rejects.toMatchObject({
      line: 2,
      message: 'line 2 is longer than 10 bytes: no server takes it',
    });
    await expect(collect(['1\n\n123456', '78901'], { maxLineBytes: 10 })).rejects.toMatchObject({
      line: 3,
    });
    let read = 0;
    const endless = (function* () {
      for (;;) {
        read += 1;
        yield 'x'.repeat(4);
      }
    })();
    await expect(collect(endless, { maxLineBytes: 10 })).rejects.toMatchObject({ line: 1 });
    expect(read).toBe(3);
  });
});

describe('leaseq publish from lines', () => {
  it('refuses a line that is not UTF-8, publishing nothing of its batch, the batches before kept', async () => {
    const name = await created();
    const file = join(dir, 'latin1.jsonl');
    // Two ids that differ only in a byte that is not UTF-8: as U+FFFD they would be one.
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from('{"id":"ok1"}\n{"id":"ok2"}\n{"id":"ok3"}\n{"id":"a'),
        Buffer.from([0xff]),
        Buffer.from('"}\n{"id":"a'),
        Buffer.from([0xfe]),
        Buffer.from('"}\n'),
      ]),
    );
    const refused = await leaseq(['publish', name, '--file', file, '--batch-size', '2'], { env });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe(
      'leaseq publish: line 4 is not well-formed UTF-8 (2 jobs were published before it)\n',
    );
    // The first batch (lines 1–2) published; line 3, in the batch of line 4, not.
    expect(await ids(name)).toEqual(['ok1', 'ok2']);

    // From standard input the same, and with --json nothing is printed for the refused batch.
    const { context, stdout, stderr } = fakeContext({ env });
    const stdin = Object.assign(
      (async function* () {
        yield Buffer.from('{"id":"b');
        yield Buffer.from([0xe9]);
        yield Buffer.from('"}\n');
      })(),
      { isTTY: false },
    );
    const code = await runCli(['publish', name, '--json'], { ...context, stdin });
    expect(code).toBe(1);
    expect(stdout.text).toBe('');
    expect(stderr.text).toContain('line 1 is not well-formed UTF-8');
    expect(await ids(name)).toEqual(['ok1', 'ok2']);
  });

  it('a stop while waiting for input ends the wait: the batch in hand is published, exit code 1', async () => {
    const name = await created();
    const stop = new AbortController();
    let waiting = () => {};
    const waitingForMore = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    let destroyed = false;
    // An idle pipe: a line, then nothing, never ended (a producer that has not written yet).
    const stdin = Object.assign(
      (async function* () {
        yield Buffer.from('{"id":"read1"}\n{"id":"read2"}\n');
        waiting();
        await new Promise(() => {});
      })(),
      {
        isTTY: false,
        destroy: () => {
          destroyed = true;
        },
      },
    );
    const { context, stdout, stderr } = fakeContext({ env });
    const running = runCli(['publish', name], { ...context, stdin, stop: stop.signal });
    await waitingForMore;
    stop.abort();
    const code = await Promise.race([
      running,
      new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 5000)),
    ]);
    expect(code).toBe(1);
    expect(stdout.text).toBe(`published 2 jobs (0 duplicates) to ${name}; stopped before line 3\n`);
    expect(stderr.text).toBe('');
    expect(await ids(name)).toEqual(['read1', 'read2']);
    // The input is let go, so that nothing keeps the process.
    expect(destroyed).toBe(true);
  });

  it('names the line of a payload too large, on either transport, without operations[0]', async () => {
    const name = await created();
    const file = join(dir, 'large.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ id: 'small' })}\n${JSON.stringify({ id: 'large', payload: 'x'.repeat(2000) })}\n`,
    );
    for (const transport of ['stream', 'http']) {
      const refused = await leaseq(['publish', name, '--file', file, '--transport', transport], {
        env,
      });
      expect(refused.code, transport).toBe(1);
      expect(refused.stderr, transport).toBe(
        'leaseq publish: lines 1–2 were not published (0 jobs were published before them): line 2: payload is 2002 bytes of JSON; the limit is 1024\n',
      );
    }
    expect(await ids(name)).toEqual([]);
  });

  it('names the line of a one-line batch refused by the client as by the server, not as job', async () => {
    const name = await created();
    const file = join(dir, 'one-deep.jsonl');
    let deep: unknown = 'leaf';
    for (let level = 0; level < 70; level++) deep = [deep];
    writeFileSync(file, `${JSON.stringify({ id: 'deep', payload: deep })}\n`);
    for (const transport of ['stream', 'http']) {
      const refused = await leaseq(['publish', name, '--file', file, '--transport', transport], {
        env,
      });
      expect(refused.code, transport).toBe(1);
      expect(refused.stderr, transport).toBe(
        'leaseq publish: line 1 was not published (0 jobs were published before it): line 1: payload is nested 70 levels deep; the server takes requests nested at most 64 levels deep (its maxJsonDepth), 59 of them for a payload\n',
      );
    }
    expect(await ids(name)).toEqual([]);
  });
});
