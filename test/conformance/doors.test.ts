import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, BrokerTransaction, Queue } from '../../src/broker/index.js';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { leaseq } from '../cli/context.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { postgresUrl, queueName } from './engines.js';

// Bad input through every door — a queue in-process on each engine, a SQL transaction, the
// remote client, the HTTP batch route and the CLI — meets the one parse of operations: the same
// ValidationError (INVALID_ARGUMENT over HTTP), and nothing changes.

// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;

type Call = (q: Queue) => Promise<unknown>;

/** Each case as a friendly call and as the operation the batch route would carry. */
const CASES: [string, Call, Record<string, unknown>][] = [
  ['publish: an empty id', (q) => q.publish({ id: '' }), { type: 'publish', jobs: [{ id: '' }] }],
  [
    'publish: a negative delay',
    (q) => q.publish({ id: 'x', delay: -5 }),
    { type: 'publish', jobs: [{ id: 'x', delay: -5 }] },
  ],
  [
    'publish: a fractional delay',
    (q) => q.publish({ id: 'x', delay: 1.5 }),
    { type: 'publish', jobs: [{ id: 'x', delay: 1.5 }] },
  ],
  ['publish: a job that is null', (q) => q.publish(bad(null)), { type: 'publish', jobs: [null] }],
  [
    'publish: expiresAt 1.5 (R30)',
    (q) => q.publish({ id: 'x', expiresAt: 1.5 }),
    { type: 'publish', jobs: [{ id: 'x', expiresAt: 1.5 }] },
  ],
  [
    'publish: expiresAt -1 (R30)',
    (q) => q.publish({ id: 'x', expiresAt: -1 }),
    { type: 'publish', jobs: [{ id: 'x', expiresAt: -1 }] },
  ],
  [
    'publishBatch: one bad entry',
    (q) => q.publishBatch([{ id: 'y' }, { id: '' }]),
    { type: 'publish', jobs: [{ id: 'y' }, { id: '' }] },
  ],
  ['reserve: max 0', (q) => q.receive({ max: 0 }), { type: 'reserve', max: 0 }],
  [
    'reserve: visibility 0',
    (q) => q.receive({ visibility: 0 }),
    { type: 'reserve', visibility: 0 },
  ],
  ['ack: token 0', (q) => q.ack(0), { type: 'ack', receipts: [5] }],
  ['ackMany: not an array', (q) => q.ackMany(bad(1)), { type: 'ack', receipts: 'x' }],
  ['nack: delay -1', (q) => q.nack(1, { delay: -1 }), { type: 'nack', receipt: 7, delay: -1 }],
  [
    'nack: requeue "no"',
    (q) => q.nack(1, { requeue: bad('no') }),
    { type: 'nack', receipt: 1, requeue: 'no' },
  ],
  [
    'nack: a delay with requeue false (R9)',
    (q) => q.nack(1, { requeue: false, delay: 100 }),
    { type: 'nack', receipt: 1, requeue: false, delay: 100 },
  ],
  ['extend: visibility 0', (q) => q.extend(1, 0), { type: 'extend', visibility: 0 }],
  [
    'openSession: prefetch 0',
    (q) => q.openSession({ prefetch: 0 }),
    { type: 'openSession', prefetch: 0 },
  ],
  [
    'openSession: timeout -1',
    (q) => q.openSession({ timeout: -1 }),
    { type: 'openSession', timeout: -1 },
  ],
  ['redrive: an empty id', (q) => q.redrive(['']), { type: 'redrive', ids: [''] }],
  ['purge: a numeric id', (q) => q.purge(bad([5])), { type: 'purge', ids: [5] }],
  [
    'purgeQueue: dead "yes"',
    (q) => q.purgeQueue(bad({ dead: 'yes' })),
    { type: 'purgeQueue', dead: 'yes' },
  ],
  ['cancel: an empty id', (q) => q.cancel(''), { type: 'cancel', id: '' }],
  [
    'cancel: remove "yes"',
    (q) => q.cancel('a', { remove: bad('yes') }),
    { type: 'cancel', id: 'a', remove: 'yes' },
  ],
  ['moveJobs: max 0', (q) => q.moveJobs({ max: 0 }), { type: 'moveJobs', max: 0 }],
  [
    'moveJobs: to a bad queue name',
    (q) => q.moveJobs({ to: 'a/b' }),
    { type: 'moveJobs', to: 'a/b' },
  ],
  [
    'moveJobs: ids not an array',
    (q) => q.moveJobs(bad({ ids: 'a' })),
    { type: 'moveJobs', ids: 'a' },
  ],
  // A misspelt name is refused, never dropped: it would fall back to the default unnoticed (a
  // job meant to be dead-lettered requeued, a payload lost).
  [
    'publish: an unknown job field',
    (q) => q.publish(bad({ id: 'x', paylod: 1 })),
    { type: 'publish', jobs: [{ id: 'x', paylod: 1 }] },
  ],
  [
    'publishBatch: an unknown field in one entry',
    (q) => q.publishBatch(bad([{ id: 'y' }, { id: 'z', dealy: 5 }])),
    { type: 'publish', jobs: [{ id: 'y' }, { id: 'z', dealy: 5 }] },
  ],
  [
    'reserve: an unknown option',
    (q) => q.receive(bad({ visiblity: 5 })),
    { type: 'reserve', visiblity: 5 },
  ],
  [
    'nack: an unknown option',
    (q) => q.nack(1, bad({ requeu: false })),
    { type: 'nack', receipt: 1, requeu: false },
  ],
  [
    'openSession: an unknown option',
    (q) => q.openSession(bad({ prefech: 5 })),
    { type: 'openSession', prefech: 5 },
  ],
  [
    'purgeQueue: an unknown option',
    (q) => q.purgeQueue(bad({ deadToo: true })),
    { type: 'purgeQueue', deadToo: true },
  ],
  [
    'cancel: an unknown option',
    (q) => q.cancel('a', bad({ remov: true })),
    { type: 'cancel', id: 'a', remov: true },
  ],
  [
    'moveJobs: an unknown option',
    (q) => q.moveJobs(bad({ destination: 'elsewhere' })),
    { type: 'moveJobs', destination: 'elsewhere' },
  ],
];

interface Door {
  name: string;
  broker(): Broker;
}

let dir: string;
let server: TestServer;
const brokers: Broker[] = [];
const DOORS: Door[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leaseq-doors-'));
  server = await startTestServer({ url: `sqlite:${join(dir, 'server.db')}` });
  const urls: [string, string][] = [
    ['queue on memory', 'memory:'],
    ['queue on sqlite', `sqlite:${join(dir, 'leaseq.db')}`],
    ['queue on postgres', postgresUrl()],
    ['remote client', server.baseUrl],
  ];
  for (const [name, url] of urls) {
    const broker = await open(url);
    brokers.push(broker);
    DOORS.push({ name, broker: () => broker });
  }
});

afterAll(async () => {
  for (const broker of brokers) await broker.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A queue with a ready job and a live delivery (token 1 held by this process). */
async function busyQueue(broker: Broker): Promise<Queue> {
  const name = queueName('door');
  const queue = await broker.queue(name, { visibility: 60_000 });
  await queue.publishBatch([{ id: 'a' }, { id: 'b' }]);
  expect(await queue.receive()).toHaveLength(1);
  return queue;
}

async function state(queue: Queue) {
  const { ready, delayed, active, dead } = await queue.inspect();
  return { ready, delayed, active, dead };
}

describe('bad input through every door', () => {
  describe.each(['queue on memory', 'queue on sqlite', 'queue on postgres', 'remote client'])(
    '%s',
    (doorName) => {
      it.each(CASES)('%s: ValidationError, nothing changes', async (_name, call) => {
        const door = DOORS.find((each) => each.name === doorName) as Door;
        const queue = await busyQueue(door.broker());
        const before = await state(queue);
        const error: unknown = await call(queue).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
        expect(await state(queue)).toEqual(before);
        await door.broker().deleteQueue(queue.name);
      });
    },
  );

  it.each(['queue on memory', 'queue on sqlite', 'queue on postgres', 'remote client'])(
    '%s: receive options that are not an object are a ValidationError, nothing changes',
    async (doorName) => {
      const door = DOORS.find((each) => each.name === doorName) as Door;
      const queue = await busyQueue(door.broker());
      const before = await state(queue);
      for (const options of [null, [], 5, 'wait']) {
        const error: unknown = await queue.receive(bad(options)).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
      }
      expect(await state(queue)).toEqual(before);
      await door.broker().deleteQueue(queue.name);
    },
  );

  it.each(['sqlite', 'postgres'])(
    'a %s transaction parses the same way: a publish with an empty id and a negative delay is refused, nothing committed',
    async (engine) => {
      const door = DOORS.find((each) => each.name === `queue on ${engine}`) as Door;
      const queue = await busyQueue(door.broker());
      const before = await state(queue);
      const works: ((tx: BrokerTransaction) => Promise<unknown>)[] = [
        (tx) => tx.publish(queue.name, { id: '', delay: -5 }),
        (tx) => tx.ack(queue.name, 0),
        (tx) => tx.nack(queue.name, 1, { delay: -1 }),
        (tx) => tx.publish(queue.name, { id: 'x', expiresAt: 1.5 }),
        (tx) => tx.publish(queue.name, bad({ id: 'x', paylod: 1 })),
        (tx) => tx.nack(queue.name, 1, bad({ requeu: false })),
      ];
      for (const work of works) {
        const error = await door
          .broker()
          .transaction(work)
          .catch((caught) => caught);
        expect(error).toBeInstanceOf(ValidationError);
      }
      expect(await state(queue)).toEqual(before);
    },
  );

  it('the HTTP batch route answers each bad operation INVALID_ARGUMENT in its place', async () => {
    const queue = await busyQueue(brokers[3] as Broker);
    const before = await state(queue);
    const response = await fetch(`${server.baseUrl}/v1/queues/${queue.name}/operations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ operations: CASES.map(([, , wire]) => wire) }),
    });
    expect(response.status).toBe(200);
    const { results } = (await response.json()) as {
      results: { ok: boolean; error?: { code: string } }[];
    };
    expect(results).toHaveLength(CASES.length);
    for (const [index, result] of results.entries()) {
      expect(result, CASES[index]?.[0]).toMatchObject({
        ok: false,
        error: { code: 'INVALID_ARGUMENT' },
      });
    }
    expect(await state(queue)).toEqual(before);
  });

  it('the CLI refuses a negative delay, as a flag or in a job line, and a line with an unknown field, publishing nothing', async () => {
    const queue = await busyQueue(brokers[3] as Broker);
    const before = await state(queue);
    // A flag is checked as a flag (a usage error); a job given as JSON meets the operation parse.
    const flag = await leaseq(['publish', queue.name, '{}', '--delay=-5'], {
      env: { LEASEQ_SERVER: server.baseUrl },
    });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--delay must be an integer from 0');
    const line = await leaseq(['publish', queue.name, '--file', '-'], {
      env: { LEASEQ_SERVER: server.baseUrl },
      stdin: '{"id": "x", "delay": -5}\n',
    });
    expect(line.code).toBe(1);
    expect(line.stderr).toContain('delay must be an integer ≥ 0, got -5');
    // A line that is a bare payload rather than a job would otherwise publish an empty job.
    for (const transport of ['stream', 'http']) {
      const payloadLine = await leaseq(
        ['publish', queue.name, '--file', '-', '--transport', transport],
        { env: { LEASEQ_SERVER: server.baseUrl }, stdin: '{"task": "resize"}\n' },
      );
      expect(payloadLine.code, transport).toBe(1);
      expect(payloadLine.stderr, transport).toContain('unknown field "task"');
    }
    expect(await state(queue)).toEqual(before);
  });
});
