import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render } from '../../src/cli/progress.js';
import { COMMANDS, runCli } from '../../src/cli/run.js';
import { open } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { fakeContext, leaseq } from './context.js';

let server: TestServer;
let env: Record<string, string>;
let dir: string;
let counter = 0;
const fresh = () => `cli${++counter}`;
const run = (argv: string[], stdin?: string) =>
  leaseq(argv, { env, ...(stdin === undefined ? {} : { stdin }) });

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-'));
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('help', () => {
  it('lists every command, and every command has --help', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    for (const command of COMMANDS) {
      expect(top.stdout).toContain(command.name);
      const help = await run([...command.name.split(' '), '--help']);
      expect(help.code, command.name).toBe(0);
      expect(help.stdout).toContain(`usage: leaseq ${command.name}`);
    }
    expect((await run(['serve', '--help'])).stdout).toContain('--port');
    expect((await run(['serve', '--help'])).stdout).toContain('LEASEQ_PORT');
    expect((await run(['publish', '--help'])).stdout).toContain('LEASEQ_SERVER');
    expect(top.stdout).toContain('--json');
    expect(top.stdout).toContain('JSON Lines');
  });

  it('lines up the settings of serve --help in columns, the longest names included', async () => {
    const rows = (await run(['serve', '--help'])).stdout
      .split('\n')
      .filter((line) => line.startsWith('--') && line.includes(' LEASEQ_'));
    expect(rows.length).toBeGreaterThan(20);
    const columns = new Set(
      rows.map((row) => `${row.indexOf(' LEASEQ_')} ${/ LEASEQ_\w+ +/.exec(row)?.[0].length}`),
    );
    expect([...columns]).toHaveLength(1);
  });

  it('refuses unknown commands and options with exit code 2', async () => {
    expect(await run(['nope'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown command "nope"'),
    });
    expect(await run(['queue'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('queue create'),
    });
    expect(await run(['queue', 'bogus'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown command "queue bogus"; the queue commands are'),
    });
    expect(await run(['help', 'bogus'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('unknown command "bogus"'),
    });
    const help = await run(['help', 'publish']);
    expect(help).toMatchObject({ code: 0 });
    expect(help.stdout).toBe((await run(['publish', '--help'])).stdout);
    // The command is found: the words after it are not part of its name.
    expect(await run(['help', 'queue', 'create', 'extra'])).toMatchObject({
      code: 2,
      stdout: '',
      stderr:
        'leaseq help queue create: unexpected argument "extra"; see leaseq help queue create\n',
    });
    expect(await run(['receive'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('missing <queue>'),
    });
    expect(await run(['receive', 'q', '--bogus'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("'--bogus'"),
    });
    expect(await run(['receive', 'q', '--max=-1'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--max must be an integer'),
    });
  });
});

describe('queues', () => {
  it('creates, lists and shows the figures of a queue, as text or JSON', async () => {
    const name = fresh();
    const created = await run([
      'queue',
      'create',
      name,
      '--visibility',
      '5000',
      '--max-deliveries',
      '3',
    ]);
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toBe(
      `created ${name}  visibility=5000ms prefetch=unbounded maxDeliveries=3 maxLease=unbounded dedupWindow=0ms\n`,
    );
    expect((await run(['queue', 'create', name, '--json'])).stdout).toContain('"created":false');
    const conflict = await run(['queue', 'create', name, '--visibility', '1']);
    expect(conflict).toMatchObject({ code: 1, stderr: expect.stringContaining('CONFLICT') });
    expect((await run(['queue', 'list'])).stdout).toContain(`${name}  visibility=5000ms`);
    const listed = JSON.parse((await run(['queue', 'list', '--json'])).stdout);
    expect(listed).toContainEqual({
      name,
      options: expect.objectContaining({ maxDeliveries: 3, prefetch: null }),
    });
    expect((await run(['queue', 'stats', name])).stdout).toMatch(/^ready\s+0$/m);
    expect(JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout)).toMatchObject({
      ready: 0,
      acks: 0,
    });
  });
});

describe('dead-letter queues (R26)', () => {
  it('queue create --dead-letter-queue names one; queue move sends jobs on, keeping their ids', async () => {
    const dlq = fresh();
    const source = fresh();
    const created = await run(['queue', 'create', source, '--dead-letter-queue', dlq]);
    expect(created.stdout).toContain(`deadLetterQueue=${dlq}`);
    await run(['queue', 'create', dlq]);
    // Not a queue name: the command line is wrong, as the client finds it (exit 2).
    const looping = await run(['queue', 'create', fresh(), '--dead-letter-queue', 'a/b']);
    expect(looping).toMatchObject({ code: 2, stderr: expect.stringContaining('deadLetterQueue') });
    await run(['publish', dlq, '--id', 'kept', '{"n":1}']);
    await run(['publish', dlq, '--id', 'other', '{}']);
    expect((await run(['queue', 'move', dlq])).stdout).toBe('moved 0 jobs\n');
    const moved = await run(['queue', 'move', dlq, 'kept', '--to', source, '--json']);
    expect(moved).toMatchObject({ code: 0 });
    expect(JSON.parse(moved.stdout)).toEqual({ moved: 1, notMoved: 0 });
    const received = JSON.parse((await run(['receive', source, '--json'])).stdout);
    expect(received).toMatchObject([{ id: 'kept', payload: { n: 1 }, deliveryCount: 1 }]);
    expect((await run(['nack', source, received[0].receipt, '--dead'])).code).toBe(0);
    // --origin picks the jobs that died in the queues named: here only `kept` died in source.
    expect((await run(['queue', 'move', dlq, '--origin', fresh()])).stdout).toBe('moved 0 jobs\n');
    const back = await run(['queue', 'move', dlq, '--origin', source, '--origin', fresh()]);
    expect(back.stdout).toBe('moved 1 job\n');
    expect(JSON.parse((await run(['job', source, 'kept', '--json'])).stdout)).toMatchObject({
      state: 'ready',
    });
    const help = (await run(['queue', 'move', '--help'])).stdout;
    expect(help).toContain('--to NAME');
    expect(help).toContain('--origin NAME');
  });
});

describe('retention and length bounds (R30, R31)', () => {
  it('queue create and queue update name retention, max-length and overflow; a full queue refuses a publish', async () => {
    const name = fresh();
    const created = await run([
      'queue',
      'create',
      name,
      '--retention',
      '60000',
      '--max-length',
      '1',
    ]);
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toContain('retention=60000ms maxLength=1\n');
    expect((await run(['queue', 'create', '--help'])).stdout).toContain('--max-length N');
    expect(await run(['publish', name, '--id', 'a', '1'])).toMatchObject({ code: 0 });
    const full = await run(['publish', name, '--id', 'b', '2']);
    expect(full).toMatchObject({ code: 1, stderr: expect.stringContaining('QUEUE_FULL') });
    const updated = await run(['queue', 'update', name, '--overflow', 'dead-letter-oldest']);
    expect(updated.stdout).toBe(
      `updated ${name}  visibility=30000ms prefetch=unbounded maxDeliveries=10 maxLease=unbounded dedupWindow=0ms retention=60000ms maxLength=1 overflow=dead-letter-oldest\n`,
    );
    expect(await run(['publish', name, '--id', 'b', '2'])).toMatchObject({ code: 0 });
    expect(JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout)).toMatchObject({
      ready: 1,
      dead: 1,
      deadLetters: { maxlen: 1 },
    });
    const endless = await run(['queue', 'update', name, '--max-deliveries', 'none']);
    expect(endless.stdout).toContain('maxDeliveries=unbounded');
    await run(['queue', 'update', name, '--max-deliveries', '10']);
    expect((await run(['help', 'queue', 'update'])).stdout).toContain('--max-deliveries none');
    const removed = await run(['queue', 'update', name, '--retention', 'none', '--json']);
    expect(JSON.parse(removed.stdout).options).not.toHaveProperty('retention');
    expect((await run(['queue', 'update', '--help'])).stdout).toContain('--retention none');
    // Every option without a default value is removed by none, the dead-letter queue too.
    const dead = fresh();
    await run(['queue', 'create', dead]);
    const bounded = await run([
      'queue',
      'update',
      name,
      '--prefetch',
      '4',
      '--max-lease',
      '60000',
      '--dead-letter-queue',
      dead,
      '--json',
    ]);
    expect(JSON.parse(bounded.stdout).options).toMatchObject({
      prefetch: 4,
      maxLease: 60000,
      deadLetterQueue: dead,
    });
    const unbounded = await run([
      'queue',
      'update',
      name,
      '--prefetch',
      'none',
      '--max-lease',
      'none',
      '--dead-letter-queue',
      'none',
    ]);
    expect(unbounded.stdout).toBe(
      `updated ${name}  visibility=30000ms prefetch=unbounded maxDeliveries=10 maxLease=unbounded dedupWindow=0ms maxLength=1 overflow=dead-letter-oldest\n`,
    );
    expect((await run(['queue', 'create', fresh(), '--prefetch', 'none'])).code).toBe(2);
    // Not a dead-letter queue named none: refused, and nothing is created.
    const plain = fresh();
    const refused = await run(['queue', 'create', plain, '--dead-letter-queue', 'none']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--dead-letter-queue none is for queue update');
    const listed = await run(['queue', 'list', '--json']);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((q) => q.name)).not.toContain(
      plain,
    );
  });

  it('refuses bad bounds as usage errors and changes nothing', async () => {
    const name = fresh();
    await run(['queue', 'create', name, '--max-length', '5']);
    for (const argv of [
      ['queue', 'create', fresh(), '--retention', '0'],
      ['queue', 'create', fresh(), '--max-length', '-1'],
      ['queue', 'update', name, '--retention', '1.5'],
      ['queue', 'update', name, '--overflow', 'drop-head'],
      ['queue', 'update', name],
      ['publish', name, '{}', '--expires-at', 'soon'],
    ]) {
      const answer = await run(argv);
      expect(answer.code, argv.join(' ')).toBe(2);
    }
    expect((await run(['queue', 'update', name, '--overflow', 'x'])).stderr).toContain(
      '--overflow must be reject or dead-letter-oldest',
    );
    expect(JSON.parse((await run(['queue', 'list', '--json'])).stdout)).toContainEqual({
      name,
      options: expect.objectContaining({ maxLength: 5 }),
    });
    expect(JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout)).toMatchObject({
      published: 0,
    });
  });

  it('publish --expires-at gives the jobs an expiry on the server clock', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const at = Date.now() + 3_600_000;
    await run(['publish', name, '--id', 'soon', '--expires-at', String(at), '{}']);
    const queue = await server.broker.queue(name);
    expect(await queue.job('soon')).toMatchObject({ state: 'ready', expiresAt: at });
  });
});

describe('pause, resume and purge (R27, R19)', () => {
  it('queue pause stops handing out, queue resume starts again, queue purge empties', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '1', '2', '3']);
    expect((await run(['queue', 'pause', name])).stdout).toBe(`paused ${name}\n`);
    expect((await run(['queue', 'list'])).stdout).toContain(`${name}  visibility=30000ms`);
    expect((await run(['queue', 'stats', name])).stdout).toMatch(/^paused\s+true$/m);
    expect(JSON.parse((await run(['receive', name, '--json'])).stdout)).toEqual([]);
    expect((await run(['queue', 'resume', name])).stdout).toBe(`resumed ${name}\n`);
    expect(JSON.parse((await run(['receive', name, '--json'])).stdout)).toHaveLength(1);
    const purged = await run(['queue', 'purge', name, '--json']);
    expect(JSON.parse(purged.stdout)).toEqual({ ready: 2, delayed: 0, active: 1, dead: 0 });
    expect(JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout)).toMatchObject({
      ready: 0,
      active: 0,
      purged: 3,
    });
  });
});

describe('cancel (R28)', () => {
  it('cancels jobs by id; an absent or dead one exits 3; the receipt of a cancelled delivery is refused', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '--id', 'a', '{}']);
    await run(['publish', name, '--id', 'b', '{}']);
    const [delivery] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    expect(await run(['cancel', name, 'a', 'b'])).toMatchObject({
      code: 0,
      stdout: 'cancelled a\ncancelled b\n',
    });
    expect((await run(['ack', name, delivery.receipt])).code).toBe(3);
    const again = await run(['cancel', name, 'a', '--json']);
    expect(again.code).toBe(3);
    expect(again.stdout).toBe('{"id":"a","cancelled":false}\n');
    await run(['publish', name, '--id', 'c', '{}']);
    await run(['publish', name, '--id', 'd', '{}']);
    // An id no queue can hold among them: refused on its own (exit 1), the others cancelled.
    const bad = await run(['cancel', name, 'c', 'x'.repeat(300), '', '--json']);
    expect(bad.code).toBe(1);
    const lines = bad.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toMatchObject([
      { id: 'c', cancelled: true },
      { id: 'x'.repeat(300), error: { code: 'INVALID_ARGUMENT' } },
      { id: '', error: { code: 'INVALID_ARGUMENT' } },
    ]);
    expect((await run(['cancel', name, 'd', '--remove'])).code).toBe(0);
    expect(JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout)).toMatchObject({
      dead: 3,
      cancelled: 4,
      ready: 0,
    });
  });
});

describe('publish, receive, ack and nack', () => {
  it('publishes payloads given as arguments, then receives and acks them by receipt', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const published = await run(['publish', name, '{"n":1}', '"two"', '3', '--delay', '0']);
    expect(published.code).toBe(0);
    expect(published.stdout.trim().split('\n')).toHaveLength(3);
    expect((await run(['publish', name, '--id', 'mine', '{}'])).stdout).toBe('published mine\n');
    expect((await run(['publish', name, '--id', 'mine', '{}'])).stdout).toBe('duplicate mine\n');
    const received = await run(['receive', name, '--max', '10', '--json']);
    const deliveries = JSON.parse(received.stdout);
    expect(deliveries.map((d: { payload: unknown }) => d.payload)).toEqual([
      { n: 1 },
      'two',
      3,
      {},
    ]);
    expect(deliveries[0]).toMatchObject({
      token: 1,
      receipt: expect.any(String),
      deliveryCount: 1,
    });
    const receipts = deliveries.map((d: { receipt: string }) => d.receipt);
    const acked = await run(['ack', name, ...receipts.slice(0, 2)]);
    expect(acked.code).toBe(0);
    expect(acked.stdout).toMatch(/^acked .+\nacked .+\n$/);
    const again = await run(['ack', name, receipts[0], '--json']);
    expect(again.code).toBe(3);
    expect(JSON.parse(again.stdout)).toEqual({ receipt: receipts[0], acked: false });
    // A refused receipt among them: the others are nacked all the same, each one reported.
    const mixed = await run(['nack', name, receipts[2], 'not-a-receipt', '--delay', '60000']);
    expect(mixed).toMatchObject({
      code: 1,
      stdout: expect.stringMatching(/^nacked \S+…\n$/),
      stderr: expect.stringMatching(/^not nacked not-a-receipt…: INVALID_RECEIPT: /),
    });
    expect((await run(['nack', name, receipts[3], '--dead', '--reason', 'bad'])).stdout).toMatch(
      /^dead-lettered /,
    );
    const stats = JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout);
    expect(stats).toMatchObject({ acks: 2, staleAcks: 1, nacks: 2, delayed: 1, dead: 1 });
  });

  it('extend moves deadlines (R10): stale is exit 3, a refused receipt 1, --visibility required', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '--id', 'x', '{}']);
    const [delivery] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    const extended = await run(['extend', name, delivery.receipt, '--visibility', '600000']);
    expect(extended).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^extended \S+ until /),
    });
    const json = await run(['extend', name, delivery.receipt, '--visibility', '900000', '--json']);
    const { deadline } = JSON.parse(json.stdout);
    expect(deadline).toBeGreaterThan(delivery.deadline);
    const [live] = await (await server.broker.queue(name)).deliveries();
    expect(live?.deadline).toBe(deadline);
    expect(await run(['extend', name, delivery.receipt])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--visibility MS is required'),
    });
    expect(await run(['extend', name, 'not-a-receipt', '--visibility', '1000'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('not extended'),
    });
    await run(['ack', name, delivery.receipt]);
    expect(await run(['extend', name, delivery.receipt, '--visibility', '1000'])).toMatchObject({
      code: 3,
      stdout: expect.stringMatching(/^stale /),
    });
  });

  it('--json: a line per input for publish, ack, nack, extend and cancel, refusals included; one document for a query', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const lines = (text: string) =>
      text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
    const published = await run(['publish', name, '1', '2', '3', '--json']);
    expect(lines(published.stdout)).toHaveLength(3);
    const deliveries = JSON.parse((await run(['receive', name, '--max', '3', '--json'])).stdout);
    expect(deliveries).toHaveLength(3);
    const [first, second, third] = deliveries.map((d: { receipt: string }) => d.receipt);
    for (const [argv, field, value] of [
      [['ack', name, first], 'acked', true],
      [['nack', name, second, '--delay', '60000'], 'nacked', true],
      [['extend', name, third, '--visibility', '60000'], 'deadline', expect.any(Number)],
    ] as const) {
      const answer = await run([...argv, 'not-a-receipt', '--json']);
      expect(answer, argv[0]).toMatchObject({ code: 1, stderr: '' });
      expect(lines(answer.stdout), argv[0]).toEqual([
        { receipt: argv[2], [field]: value },
        {
          receipt: 'not-a-receipt',
          error: { code: 'INVALID_RECEIPT', message: expect.any(String) },
        },
      ]);
    }
    const ids: string[] = lines(published.stdout).map((result: { id: string }) => result.id);
    const cancelled = await run(['cancel', name, ids[1] as string, 'nobody', '--json']);
    expect(cancelled.code).toBe(3);
    expect(lines(cancelled.stdout)).toEqual([
      { id: ids[1], cancelled: true },
      { id: 'nobody', cancelled: false },
    ]);
    // A query's answer is one document whatever the flags: dead list an object with its next.
    for (const flags of [[], ['--limit', '5']]) {
      const dead = await run(['dead', 'list', name, ...flags, '--json']);
      expect(JSON.parse(dead.stdout)).toEqual({
        deadLetters: [expect.objectContaining({ id: ids[1] })],
        next: null,
      });
    }
  });

  it('job shows one job: its state, payload and history; an id with no job is exit 3', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '--id', 'j1', '{"n":1}']);
    expect(await run(['job', name, 'j1'])).toMatchObject({
      code: 0,
      stdout: 'j1  state=ready deliveries=0\n  payload {"n":1}\n',
    });
    const [delivery] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    await run(['nack', name, delivery.receipt, '--dead', '--reason', 'bad input']);
    const shown = await run(['job', name, 'j1']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^j1 {2}state=dead deliveries=1 reason=bad input deadAt=\S+\n/);
    expect(shown.stdout).toMatch(/\n {2}token 1: \S+ \(bad input\) after \d+ms\n$/);
    const json = JSON.parse((await run(['job', name, 'j1', '--json'])).stdout);
    expect(json).toEqual(await (await server.broker.queue(name)).job('j1'));
    expect(await run(['job', name, 'nobody'])).toMatchObject({
      code: 3,
      stderr: `no job nobody in ${name}\n`,
    });
    expect((await run(['job', name, 'x'.repeat(257)])).code).not.toBe(0);
  });

  it('nack --error keeps what went wrong with the attempt, and job shows it', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '--id', 'e1', '{}']);
    const [first] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    expect(await run(['nack', name, first.receipt, '--unworked', '--error', 'boom'])).toMatchObject(
      { code: 2, stderr: expect.stringContaining('--error describes an attempt') },
    );
    expect(await run(['nack', name, first.receipt, '--error', ''])).toMatchObject({ code: 2 });
    expect((await run(['nack', name, first.receipt, '--error', 'disk full\nretry'])).code).toBe(0);
    const [second] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    const dead = ['--dead', '--reason', 'poison', '--error', 'bad input'];
    expect((await run(['nack', name, second.receipt, ...dead])).code).toBe(0);
    const shown = await run(['job', name, 'e1']);
    expect(shown.stdout).toMatch(/\n {2}token 1: requeued after \d+ms: "disk full\\nretry"\n/);
    expect(shown.stdout).toMatch(/\n {2}token 2: rejected \(poison\) after \d+ms: "bad input"\n$/);
    const json = JSON.parse((await run(['job', name, 'e1', '--json'])).stdout);
    expect(json.history.map((a: { error?: string }) => a.error)).toEqual([
      'disk full\nretry',
      'bad input',
    ]);
  });

  it('gives a delivery back unworked (R33): to the front, not counted as a delivery', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '--id', 'u', '{}']);
    const [delivery] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    expect(await run(['nack', name, delivery.receipt, '--unworked', '--dead'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--unworked'),
    });
    // Flags that would be dropped, or fail at the server, are refused before anything is sent.
    expect(await run(['nack', name, delivery.receipt, '--reason', 'bad'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--reason is the dead-letter reason: it goes with --dead'),
    });
    expect(await run(['nack', name, delivery.receipt, '--dead', '--delay', '100'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--delay requeues later'),
    });
    expect((await run(['nack', name, delivery.receipt, '--unworked'])).stdout).toMatch(
      /^requeued unworked /,
    );
    const [again] = JSON.parse((await run(['receive', name, '--json'])).stdout);
    expect(again).toMatchObject({ id: 'u', deliveryCount: 1, redelivered: false });
  });

  it('refuses a payload that is not JSON, and --id with several payloads', async () => {
    const name = fresh();
    expect(await run(['publish', name, '1', '--progress'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--progress goes with --file or JSON lines on stdin'),
    });
    expect((await run(['publish', '--help'])).stdout).toContain('[--batch-size N] [--progress]');
    expect(await run(['publish', name, 'hello'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('payload 1 is not JSON'),
    });
    expect(await run(['publish', name, '--id', 'x', '1', '2'])).toMatchObject({ code: 2 });
    expect(await run(['publish', name])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('JSON lines on stdin'),
    });
  });

  it('publishes JSON lines from stdin, and from a file in batches with a progress bar', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const fromStdin = await run(['publish', name], '{"id":"s1","payload":1}\n\n{"payload":2}\n');
    expect(fromStdin.stdout).toBe(`published 2 jobs (0 duplicates) to ${name}\n`);
    const file = join(dir, 'jobs.jsonl');
    const lines = Array.from({ length: 250 }, (_, i) =>
      JSON.stringify({ id: `f${i}`, payload: { i } }),
    );
    writeFileSync(file, `${lines.join('\n')}\n{"id":"s1"}`);
    const fromFile = await run(['publish', name, '--file', file, '--progress']);
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toBe(`published 250 jobs (1 duplicate) to ${name}\n`);
    expect(fromFile.stderr).toContain('publishing [##############################] 100% 251 jobs');
    // A file saved with a UTF-8 byte order mark (Windows editors): the mark is not JSON.
    const marked = join(dir, 'bom.jsonl');
    writeFileSync(marked, '\uFEFF{"id":"bom1"}\n{"id":"bom2"}\n');
    expect(await run(['publish', name, '--file', marked])).toMatchObject({
      code: 0,
      stdout: `published 2 jobs (0 duplicates) to ${name}\n`,
    });
    const json = await run(['publish', name, '--file', file, '--json', '--batch-size', '100']);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).duplicate),
    ).toEqual(Array(251).fill(true));
  });

  it('stops reading at SIGINT or SIGTERM and says where', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const stop = new AbortController();
    stop.abort();
    const stopped = await leaseq(['publish', name], {
      env,
      stdin: '{"id":"a"}\n{"id":"b"}\n',
      stop: stop.signal,
    });
    expect(stopped).toMatchObject({
      code: 1,
      stdout: `published 0 jobs (0 duplicates) to ${name}; stopped before line 1\n`,
    });
  });

  it('says which lines failed and how many jobs were published before them', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, '{"id":"a"}\n{"id":"b"}\n{"id":"c","delay":-1}\n{"id":"d"}\n');
    const bad = await run(['publish', name, '--file', file, '--batch-size', '2']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      'lines 3–4 were not published (2 jobs were published before them)',
    );
    // The batch's first job is the file's line 3, named so.
    expect(bad.stderr).toContain('line 3: delay must be an integer ≥ 0, got -1');
    writeFileSync(file, '{"id":"a2"}\n\n{"id":"b2","priority":10}\n');
    expect((await run(['publish', name, '--file', file])).stderr).toContain(
      'lines 1–3 were not published (0 jobs were published before them): line 3: priority must be',
    );
    writeFileSync(file, '{"id":"x"}\nnot json\n');
    expect((await run(['publish', name, '--file', file])).stderr).toContain(
      'line 2 is not JSON (0 jobs were published before it)',
    );
    // One line, one job: said in the singular.
    writeFileSync(file, '{"id":"a3"}\n{"id":"b3","delay":-1}\n');
    expect((await run(['publish', name, '--file', file, '--batch-size', '1'])).stderr).toContain(
      'line 2 was not published (1 job was published before it): line 2: delay must be',
    );
  });

  it('says how to change the options of a queue created again with others', async () => {
    const name = fresh();
    await run(['queue', 'create', name, '--visibility', '5000']);
    const again = await run(['queue', 'create', name, '--visibility', '6000']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      `CONFLICT: queue ${name} exists with other options (visibility: stored 5000, asked 6000); update the queue to change them (updateQueue, PATCH /v1/queues/${name}, leaseq queue update)`,
    );
  });

  it('says what range a flag takes when given a negative number (not a parser riddle)', async () => {
    const name = fresh();
    for (const [argv, message] of [
      [['queue', 'create', name, '--visibility', '-5'], '--visibility must be an integer from 1'],
      [['publish', name, '1', '--delay', '-1'], '--delay must be an integer from 0'],
    ] as const) {
      const bad = await run([...argv]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`${message} to 9007199254740991, got "-`);
      expect(bad.stderr).not.toContain('ambiguous');
    }
    expect((await run(['queue', 'list', '--json'])).stdout).not.toContain(name);
  });

  it('names a --file it cannot read as a command-line error, before asking any server', async () => {
    const missing = join(dir, 'missing.jsonl');
    const noServer = { LEASEQ_SERVER: 'http://127.0.0.1:9' };
    const gone = await leaseq(['publish', 'q', '--file', missing], { env: noServer });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain(`cannot read --file ${missing}: no such file`);
    expect(gone.stderr).not.toContain('STORAGE_UNAVAILABLE');
    const folder = await leaseq(['publish', 'q', '--file', dir], { env: noServer });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain(`--file ${dir} is a directory`);
  });

  it('refuses job flags with --file and --batch-size with arguments, publishing nothing', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const file = join(dir, 'flags.jsonl');
    writeFileSync(file, '{"id":"pf1"}\n');
    const flagged = await run([
      'publish',
      name,
      '--file',
      file,
      '--delay',
      '100000',
      '--group',
      'g',
    ]);
    expect(flagged.code).toBe(2);
    expect(flagged.stderr).toContain(
      '--delay, --group go with payloads given as arguments; in JSON lines, give them as fields of each job',
    );
    const piped = await run(['publish', name, '--id', 'z'], '{"id":"f1"}\n');
    expect(piped.code).toBe(2);
    expect(piped.stderr).toContain('--id goes with payloads given as arguments');
    const sized = await run(['publish', name, '1', '--batch-size', '5']);
    expect(sized.code).toBe(2);
    expect(sized.stderr).toContain('--batch-size goes with --file');
    expect(JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout)).toMatchObject({
      published: 0,
    });
  });

  it('R23 publishes with --priority; higher priorities are received first', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '"low"']);
    await run(['publish', name, '"high"', '--priority', '9']);
    expect((await run(['publish', name, '1', '--priority', '10'])).code).toBe(2);
    const received = JSON.parse((await run(['receive', name, '--max', '2', '--json'])).stdout);
    expect(received.map((d: { payload: unknown }) => d.payload)).toEqual(['high', 'low']);
  });

  it('R24 publishes with --group: one job of a group at a time, in publish order', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '1', '2', '--group', 'g']);
    await run(['publish', name, '3']);
    // R29: a single grouped publish names its group sequence number, a duplicate the same one.
    const single = await run(['publish', name, '--id', 'g4', '--group', 'g', '4']);
    expect(single.stdout).toMatch(/^published g4 \(group sequence (\d+)\)\n$/);
    const again = await run(['publish', name, '--id', 'g4', '--group', 'g', '4']);
    expect(again.stdout).toBe(single.stdout.replace('published', 'duplicate'));
    const first = JSON.parse((await run(['receive', name, '--max', '5', '--json'])).stdout);
    expect(first.map((d: { payload: unknown; group?: string }) => [d.payload, d.group])).toEqual([
      [1, 'g'],
      [3, undefined],
    ]);
    await run(['ack', name, first[0].receipt]);
    const second = JSON.parse((await run(['receive', name, '--json'])).stdout);
    expect(second.map((d: { payload: unknown }) => d.payload)).toEqual([2]);
  });

  it('R25 sets, lists and removes periodic jobs', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    const set = await run(['schedule', 'set', name, 'nightly', '--cron', '0 3 * * *', '--json']);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ name: 'nightly', cron: '0 3 * * *' });
    const every = ['schedule', 'set', name, 'pulse', '--every', '60000', '--payload', '{"n":1}'];
    expect((await run(every)).stdout).toMatch(/^pulse {2}every 60000 ms {2}next /);
    // A --cron refused is the command line's mistake, as a missing one is.
    expect((await run(['schedule', 'set', name, 'x', '--cron', 'nope'])).code).toBe(2);
    expect((await run(['schedule', 'set', name, 'x'])).code).toBe(2);
    // A cron with no time to come is refused, and not stored: the list still prints.
    const never = await run(['schedule', 'set', name, 'never', '--cron', '0 0 31 2 *']);
    expect(never.code).toBe(2);
    expect(never.stderr).toContain('never fire');
    expect((await run(['schedule', 'list', name])).code).toBe(0);
    const listed = JSON.parse((await run(['schedule', 'list', name, '--json'])).stdout);
    expect(listed.map((s: { name: string }) => s.name)).toEqual(['nightly', 'pulse']);
    expect((await run(['schedule', 'remove', name, 'pulse'])).stdout).toBe('removed pulse\n');
    expect((await run(['schedule', 'remove', name, 'pulse'])).code).toBe(3);
  });

  it('R22 receives at most once with --auto-ack: the jobs are gone, shown without a receipt to settle them by', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '1', '2', '3', '4']);
    const received = await run(['receive', name, '--max', '2', '--auto-ack', '--json']);
    const deliveries = JSON.parse(received.stdout);
    expect(deliveries.map((d: { payload: unknown }) => d.payload)).toEqual([1, 2]);
    for (const delivery of deliveries) {
      expect(delivery).not.toHaveProperty('receipt');
      expect(delivery).not.toHaveProperty('deadline');
    }
    const shown = (await run(['receive', name, '--auto-ack'])).stdout;
    expect(shown).toMatch(
      /^id \S+ {2}token \d+ {2}delivery 1 {2}\(removed: auto-ack\)\n {2}payload 3\n$/,
    );
    const stats = JSON.parse((await run(['queue', 'stats', name, '--json'])).stdout);
    // Leased until written, then acked (an auto-acked job would be lost if it could not be).
    expect(stats).toMatchObject({ ready: 1, active: 0, autoAcked: 0, acks: 3 });
  });

  it('shows a job published without a payload as having none', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name], '{"id":"bare"}\n{"id":"full","payload":{"n":1}}\n');
    const shown = (await run(['receive', name, '--max', '2'])).stdout;
    expect(shown).toMatch(/^id bare .*\n {2}receipt \S+\n {2}\(no payload\)\n/);
    expect(shown).toContain('  payload {"n":1}\n');
    expect(shown).not.toContain('undefined');
  });

  it('receives nothing from an empty queue, and waits with --wait', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    expect(await run(['receive', name])).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'no job ready\n',
    });
    const started = Date.now();
    expect((await run(['receive', name, '--wait', '200', '--json'])).stdout).toBe('[]\n');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    // Stopped by SIGINT or SIGTERM while it waits: said so, exit 1, not "no job ready".
    const stop = new AbortController();
    const stopping = leaseq(['receive', name, '--wait', '20000'], { env, stop: stop.signal });
    setTimeout(() => stop.abort(), 100);
    expect(await stopping).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'stopped before a job came\n',
    });
  });

  it('says that a paused queue hands out nothing, not that no job is ready', async () => {
    const name = fresh();
    await run(['queue', 'create', name]);
    await run(['publish', name, '1']);
    await run(['queue', 'pause', name]);
    for (const flags of [[], ['--auto-ack']]) {
      expect(await run(['receive', name, ...flags])).toMatchObject({
        code: 0,
        stdout: '',
        stderr: `no job handed out: queue ${name} is paused (leaseq queue resume ${name})\n`,
      });
    }
    expect((await run(['receive', name, '--json'])).stdout).toBe('[]\n');
    await run(['queue', 'resume', name]);
    expect((await run(['receive', name])).stdout).toMatch(/^id /);
  });
});

describe('dead letters', () => {
  it('lists dead jobs with their history and redrives them with a progress bar', async () => {
    const name = fresh();
    await run(['queue', 'create', name, '--max-deliveries', '1']);
    await run(['publish', name, '--id', 'd1', '1']);
    await run(['publish', name, '--id', 'd2', '2']);
    const deliveries = JSON.parse((await run(['receive', name, '--max', '2', '--json'])).stdout);
    await run(['nack', name, ...deliveries.map((d: { receipt: string }) => d.receipt)]);
    const listed = await run(['dead', 'list', name]);
    expect(listed.stdout).toMatch(
      /^d1 {2}reason=max-deliveries deliveries=1 deadAt=\S+\n {2}token 1: requeued after \d+ms\n/,
    );
    const all = JSON.parse((await run(['dead', 'list', name, '--json'])).stdout);
    expect(all).toEqual({
      deadLetters: [expect.objectContaining({ id: 'd1' }), expect.anything()],
      next: null,
    });
    // R34: a page at a time, the next one's command said on stderr.
    const first = await run(['dead', 'list', name, '--limit', '1']);
    expect(first.stdout).toMatch(/^d1 /);
    expect(first.stdout).not.toContain('d2');
    const more = /more: leaseq dead list \S+ --limit 1 --after (\S+)\n/.exec(first.stderr);
    expect(more).not.toBeNull();
    const second = await run(['dead', 'list', name, '--limit', '1', '--after', more?.[1] ?? '']);
    expect(second.stdout).toMatch(/^d2 /);
    expect(second.stderr).toBe('');
    const last = ['dead', 'list', name, '--limit', '1', '--after', more?.[1] ?? '', '--json'];
    expect(JSON.parse((await run(last)).stdout)).toEqual({
      deadLetters: [expect.objectContaining({ id: 'd2' })],
      next: null,
    });
    const paged = JSON.parse((await run(['dead', 'list', name, '--limit', '1', '--json'])).stdout);
    expect(paged).toEqual({
      deadLetters: [expect.objectContaining({ id: 'd1' })],
      next: more?.[1],
    });
    expect(await run(['dead', 'list', name, '--limit', '0'])).toMatchObject({ code: 2 });
    expect(await run(['dead', 'list', name, '--after', 'x'])).toMatchObject({ code: 2 });
    // Stopped by a signal before its first batch: says so, exit 1, nothing redriven.
    const stop = new AbortController();
    stop.abort();
    expect(await leaseq(['dead', 'redrive', name], { env, stop: stop.signal })).toMatchObject({
      code: 1,
      stdout: 'redriven 0 jobs; stopped with 2 not tried\n',
    });
    expect(
      await leaseq(['dead', 'redrive', name, '--json'], { env, stop: stop.signal }),
    ).toMatchObject({ code: 1, stdout: '{"redriven":0,"stopped":true,"notTried":2}\n' });
    const redriven = await run(['dead', 'redrive', name, '--batch-size', '1', '--progress']);
    expect(redriven.stdout).toBe('redriven 2 jobs\n');
    expect(redriven.stderr).toContain('100% 2 jobs');
    expect(await run(['dead', 'list', name])).toMatchObject({
      stdout: '',
      stderr: 'no dead jobs\n',
    });
    expect(await run(['dead', 'redrive', name, 'nobody', '--json'])).toMatchObject({
      code: 3,
      stdout: '{"redriven":0,"notRedriven":["nobody"]}\n',
    });
    // A named dead job is redriven; a ready one and an unknown one are named as left alone.
    await run(['publish', name, '--id', 'd3', '3']);
    const received = JSON.parse((await run(['receive', name, '--max', '3', '--json'])).stdout);
    const third = received.find((delivery: { id: string }) => delivery.id === 'd3');
    await run(['nack', name, third.receipt, '--dead']);
    await run([
      'nack',
      name,
      ...received
        .filter((delivery: { id: string }) => delivery.id !== 'd3')
        .map((delivery: { receipt: string }) => delivery.receipt),
      '--unworked',
    ]);
    expect(await run(['dead', 'redrive', name, 'd3', 'd1', 'nobody', 'd3'])).toMatchObject({
      code: 3,
      stdout:
        'redriven 1 job\nnot redriven (absent or not dead) d1\nnot redriven (absent or not dead) nobody\n',
    });
    expect(await run(['dead', 'redrive', name])).toMatchObject({ code: 0 });
  });
});

describe('errors', () => {
  it('says when no server answers, with exit code 1', async () => {
    const down = await leaseq(['queue', 'list'], { env: { LEASEQ_SERVER: 'http://127.0.0.1:1' } });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('STORAGE_UNAVAILABLE: cannot reach http://127.0.0.1:1');
    expect(down.stderr).toContain('is `leaseq serve` running there?');
    // So do the commands that report each input: once, on standard error, --json or not.
    for (const args of [
      ['ack', 'q', 'r1', 'r2', '--json'],
      ['cancel', 'q', 'a', 'b', '--transport', 'http'],
    ]) {
      const each = await leaseq(args, { env: { LEASEQ_SERVER: 'http://127.0.0.1:1' } });
      expect(each.code).toBe(1);
      expect(each.stdout).toBe('');
      expect(each.stderr.match(/STORAGE_UNAVAILABLE/g)).toHaveLength(1);
    }
  });

  it('job: a queue that does not exist is NOT_FOUND (exit 1), not a job that is not there', async () => {
    const missing = await run(['job', fresh(), 'x']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('NOT_FOUND');
    const name = fresh();
    await run(['queue', 'create', name]);
    expect((await run(['job', name, 'x'])).code).toBe(3);
  });

  it('refuses a server URL that cannot name a server as a usage error (exit 2), secrets unshown', async () => {
    for (const [server, problem] of [
      ['http://', 'is not a valid URL'],
      ['127.0.0.1:7700', 'a server URL is http(s)://host:port'],
      ['http://u:hunter2@127.0.0.1:7700', 'must not carry credentials'],
      ['ftp://u:hunter2@127.0.0.1:7700', 'a server URL is http(s)://host:port, got "ftp://***@'],
      ['http://u:hunter2@127.0.0.1:99999', 'server URL "http://***@127.0.0.1:99999" is not'],
    ]) {
      const bad = await leaseq(['queue', 'list', '--server', server as string], { env: {} });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(problem);
      expect(bad.stderr).not.toContain('hunter2');
    }
  });

  it('passes the API key and reports a refusal by its code', async () => {
    const guarded = await startTestServer({
      keys: [
        { name: 'p', key: 'publisher-key-123456', allow: [{ queues: '*', actions: ['publish'] }] },
      ],
    });
    try {
      const base = { LEASEQ_SERVER: guarded.baseUrl };
      expect((await leaseq(['queue', 'list'], { env: base })).stderr).toContain('UNAUTHENTICATED');
      const forbidden = await leaseq(
        ['queue', 'create', 'x', '--api-key', 'publisher-key-123456'],
        { env: base },
      );
      expect(forbidden).toMatchObject({ code: 1, stderr: expect.stringContaining('FORBIDDEN') });
      const listed = await leaseq(['queue', 'list', '--json'], {
        env: { ...base, LEASEQ_API_KEY: 'publisher-key-123456' },
      });
      expect(listed).toMatchObject({ code: 0, stdout: '[]\n' });
    } finally {
      await guarded.close();
    }
  });
});

describe('refusals of the API key', () => {
  it('says how to give a key, and that a key lacks a right, for a command and for each receipt or id', async () => {
    const guarded = await startTestServer({
      keys: [
        { name: 'p', key: 'publisher-key-123456', allow: [{ queues: '*', actions: ['publish'] }] },
      ],
    });
    try {
      const base = { LEASEQ_SERVER: guarded.baseUrl };
      const keyed = { ...base, LEASEQ_API_KEY: 'publisher-key-123456' };
      await guarded.broker.queue('x');
      const unkeyed = await leaseq(['dead', 'list', 'x'], { env: base });
      expect(unkeyed.code).toBe(1);
      expect(unkeyed.stderr).toContain('leaseq dead list: UNAUTHENTICATED: ');
      expect(unkeyed.stderr).toContain('(give a valid API key: --api-key KEY or LEASEQ_API_KEY)');
      const wrong = await leaseq(['dead', 'list', 'x', '--api-key', 'not-the-key-12345678'], {
        env: base,
      });
      expect(wrong.stderr).toContain('(give a valid API key: --api-key KEY or LEASEQ_API_KEY)');
      const forbidden = await leaseq(['dead', 'list', 'x'], { env: keyed });
      expect(forbidden.code).toBe(1);
      expect(forbidden.stderr).toContain('leaseq dead list: FORBIDDEN: ');
      expect(forbidden.stderr).toContain('this API key lacks the right');
      // Each receipt refused: each said, the hint once.
      const nacked = await leaseq(['nack', 'x', 'r1', 'r2'], { env: base });
      expect(nacked.code).toBe(1);
      expect(nacked.stderr.match(/UNAUTHENTICATED/g)).toHaveLength(2);
      expect(nacked.stderr.match(/--api-key KEY or LEASEQ_API_KEY/g)).toHaveLength(1);
      const cancelled = await leaseq(['cancel', 'x', 'a', 'b'], { env: keyed });
      expect(cancelled.code).toBe(1);
      expect(cancelled.stderr).toMatch(
        /^not cancelled a: FORBIDDEN: .*\nnot cancelled b: FORBIDDEN: /,
      );
      expect(cancelled.stderr.match(/this API key lacks the right/g)).toHaveLength(1);
      const json = await leaseq(['cancel', 'x', 'a', '--json'], { env: keyed });
      expect(JSON.parse(json.stdout)).toEqual({
        id: 'a',
        error: { code: 'FORBIDDEN', message: expect.any(String) },
      });
    } finally {
      await guarded.close();
    }
  });
});

describe('serve', () => {
  /** `leaseq serve` in this process on a free port, once it logged its URL. */
  async function serve(context: ReturnType<typeof fakeContext>) {
    const running = runCli(
      ['serve', '--storage', 'memory:', '--port', '0', '--log-level', 'info'],
      context.context,
    );
    let url: string | undefined;
    for (let i = 0; i < 100 && url === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      url = /leaseq listening on (http:\/\/\S+?)"/.exec(context.stdout.text)?.[1];
    }
    return { running, url };
  }

  it('starts from flags, serves, and stops when told to', async () => {
    const stop = new AbortController();
    const cli = fakeContext({ stop: stop.signal, env: {} });
    const { stdout } = cli;
    const { running, url } = await serve(cli);
    expect(url).toBeDefined();
    expect(
      (await leaseq(['queue', 'create', 'served'], { env: { LEASEQ_SERVER: url as string } })).code,
    ).toBe(0);
    stop.abort();
    expect(await running).toBe(0);
    expect(stdout.text).toContain('"msg":"stopped"');
  });

  it('writes its log lines to standard output in blocks, not a write per line, and all by exit', async () => {
    const stop = new AbortController();
    const cli = fakeContext({ stop: stop.signal, env: {} });
    const { stdout } = cli;
    let writes = 0;
    const write = stdout.write.bind(stdout);
    stdout.write = (chunk: string) => {
      writes += 1;
      return write(chunk);
    };
    const { running, url } = await serve(cli);
    const broker = await open(url as string);
    const queue = await broker.queue('logged');
    await queue.publishBatch(Array.from({ length: 60 }, (_, n) => ({ payload: { n } })));
    for (const delivery of await queue.receive({ max: 60 })) await queue.ack(delivery.token);
    await broker.close();
    stop.abort();
    expect(await running).toBe(0);
    const lines = stdout.text.trimEnd().split('\n');
    expect(lines.filter((line) => line.includes('"msg":"acked"'))).toHaveLength(60);
    expect(lines.at(-1)).toContain('"msg":"stopped"');
    // 60 deliveries and 60 acks at least: a write per line would be over 120.
    expect(writes).toBeLessThan(lines.length / 4);
  });

  it('reports every wrong setting with exit code 2 before starting', async () => {
    const result = await leaseq(['serve', '--port', 'x', '--max-batch', '0'], {
      env: { LEASEQ_HOST: '0.0.0.0' },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      [
        'leaseq serve: invalid configuration:',
        '  - port: must be an integer from 0 to 65535, got "x" (from --port)',
        '  - maxBatch: must be an integer from 1 to 10000, got "0" (from --max-batch)',
        '  - host: 0.0.0.0 is not a loopback address and no API keys are configured; configure keys or listen on 127.0.0.1 (from LEASEQ_HOST)',
        '',
      ].join('\n'),
    );
    // A server's storage cannot be another server: named as a setting, not as an option of open.
    for (const [args, env] of [
      [['serve', '--storage', 'http://127.0.0.1:7700'], {}],
      [['serve'], { LEASEQ_STORAGE: 'https://queues.example' }],
    ] as const) {
      const remote = await leaseq([...args], { env });
      expect(remote.code).toBe(2);
      expect(remote.stderr).toContain('  - storage: storage URL "http');
      expect(remote.stderr).toContain('a server cannot store in another server');
      expect(remote.stderr).not.toContain('durability');
    }
    const sqs = await leaseq(
      ['serve', '--sqs-base-url', 'not a url', '--sqs-account-id', 'x y', '--sqs-region', ' '],
      { env: {} },
    );
    expect(sqs.code).toBe(2);
    for (const setting of ['sqsBaseUrl', 'sqsRegion', 'sqsAccountId']) {
      expect(sqs.stderr).toContain(`  - ${setting}: must be`);
    }
    const file = join(dir, 'missing.json');
    expect(await leaseq(['serve', '--config', file])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`cannot read the config file ${file}`),
    });
  });
});

describe('the progress bar', () => {
  it('draws a bar with a percentage, or only a count when the total is unknown', () => {
    expect(render('x', 50, 100, '5 jobs')).toBe(
      `x [${'#'.repeat(15)}${'.'.repeat(15)}]  50% 5 jobs`,
    );
    expect(render('x', 7, undefined, '7 jobs')).toBe('x 7 jobs');
  });
});

describe("batches of the server's maxBatch", () => {
  it('publish --file and dead redrive send batches the server takes, by default', async () => {
    const small = await startTestServer({ limits: { maxBatch: 3 } });
    try {
      const at = { LEASEQ_SERVER: small.baseUrl };
      const queue = await small.broker.queue('small');
      const lines = [...Array(7)].map((_, i) => JSON.stringify({ id: `b${i}` })).join('\n');
      const published = await leaseq(['publish', 'small', '--file', '-'], {
        env: at,
        stdin: lines,
      });
      expect(published).toMatchObject({
        code: 0,
        stdout: 'published 7 jobs (0 duplicates) to small\n',
      });
      for (const delivery of await queue.receive({ max: 7 })) {
        await queue.nack(delivery.token, { requeue: false });
      }
      expect((await queue.stats()).dead).toBe(7);
      const redriven = await leaseq(['dead', 'redrive', 'small'], { env: at });
      expect(redriven).toMatchObject({ code: 0, stdout: 'redriven 7 jobs\n' });
      expect((await queue.stats()).ready).toBe(7);
      // A size above the server's is refused by it, naming the setting.
      const over = await leaseq(['publish', 'small', '--file', '-', '--batch-size', '4'], {
        env: at,
        stdin: lines,
      });
      expect(over.code).not.toBe(0);
      expect(over.stderr).toContain("this server's maxBatch");
    } finally {
      await small.close();
    }
  });

  it("ack settles each receipt on its own beyond the server's maxBatch: the valid ones acked, a refused one reported", async () => {
    const small = await startTestServer({ limits: { maxBatch: 3 } });
    try {
      const at = { LEASEQ_SERVER: small.baseUrl };
      const queue = await small.broker.queue('acks');
      await queue.publishBatch([...Array(5)].map((_, i) => ({ id: `a${i}` })));
      const receipts: string[] = [];
      for (const max of ['3', '2']) {
        const received = await leaseq(['receive', 'acks', '--max', max, '--json'], { env: at });
        receipts.push(...JSON.parse(received.stdout).map((d: { receipt: string }) => d.receipt));
      }
      expect(receipts).toHaveLength(5);
      // The refused receipt among the second maxBatch of them.
      const acked = await leaseq(
        ['ack', 'acks', ...receipts.slice(0, 4), 'not-a-receipt', ...receipts.slice(4)],
        {
          env: at,
        },
      );
      expect(acked).toMatchObject({
        code: 1,
        stdout: expect.stringMatching(/^(acked \S+…\n){5}$/),
        stderr: expect.stringMatching(/^not acked not-a-receipt…: INVALID_RECEIPT: [^\n]*\n$/),
      });
      expect(await queue.stats()).toMatchObject({ acks: 5, active: 0, ready: 0 });
    } finally {
      await small.close();
    }
  });
});
