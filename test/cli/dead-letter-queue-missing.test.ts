import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq queue create|update --dead-letter-queue NAME` where no queue has that name: taken, as
// R26 allows (one created later receives from then on), but said on stderr, so that a mistyped
// name does not pass unnoticed while dead jobs stay where they died.

let server: TestServer;
let env: Record<string, string>;
let counter = 0;
const fresh = () => `dlqnote${++counter}`;
const run = (argv: string[]) => leaseq(argv, { env });

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

const note = (dlq: string, name: string) =>
  `note: queue ${dlq} does not exist: until it is created, jobs that die in ${name} stay in its dead set (leaseq dead list ${name})\n`;

describe('a dead-letter queue named that does not exist', () => {
  it('is taken by queue create and queue update, with a note on stderr', async () => {
    const name = fresh();
    const dlq = fresh();
    const created = await run(['queue', 'create', name, '--dead-letter-queue', dlq]);
    expect(created).toMatchObject({ code: 0, stderr: note(dlq, name) });
    expect(created.stdout).toContain(`deadLetterQueue=${dlq}`);
    const other = fresh();
    const updated = await run(['queue', 'update', name, '--dead-letter-queue', other, '--json']);
    expect(updated).toMatchObject({ code: 0, stderr: note(other, name) });
    expect(JSON.parse(updated.stdout)).toMatchObject({ name, options: { deadLetterQueue: other } });
    expect(await (await server.broker.queue(name)).options()).toMatchObject({
      deadLetterQueue: other,
    });
  });

  it('says nothing more once the queue exists, or when none is named', async () => {
    const name = fresh();
    const dlq = fresh();
    await server.broker.queue(dlq);
    const created = await run(['queue', 'create', name, '--dead-letter-queue', dlq]);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const updated = await run(['queue', 'update', name, '--visibility', '5000']);
    expect(updated).toMatchObject({ code: 0, stderr: '' });
    const removed = await run(['queue', 'update', name, '--dead-letter-queue', 'none']);
    expect(removed).toMatchObject({ code: 0, stderr: '' });
  });
});
