import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// Job ids are any storable text (R18), control characters included, and come from producers.
// Text output shows an id holding one as a JSON string: raw, a newline would break the line
// into two, and an escape sequence would act on the reader's terminal.

let server: TestServer;
let env: Record<string, string>;
const run = (argv: string[]) => leaseq(argv, { env });
const ESCAPE = '\u001b';
const ID = `job\n${ESCAPE}[31mred`;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('text output of ids with control characters', () => {
  it('shows them as JSON strings in receive, job and dead list, and plain ids as they are', async () => {
    const queue = await server.broker.queue('shown', { maxDeliveries: 1 });
    await queue.publishBatch([{ id: ID }, { id: 'plain' }]);
    const received = await run(['receive', 'shown', '--max', '2', '--visibility', '60000']);
    expect(received.stdout).toContain(`id ${JSON.stringify(ID)}  token 1`);
    expect(received.stdout).toContain('id plain  token 2');
    const job = await run(['job', 'shown', ID]);
    expect(job.stdout.split('\n')[0]).toMatch(/^"job\\n\\u001b\[31mred" {2}/);
    // Both in flight from the receive above: dead by a reject each.
    for (const delivery of (await queue.inspect()).active) {
      await queue.nack(delivery.token, { requeue: false });
    }
    const dead = await run(['dead', 'list', 'shown']);
    expect(dead.stdout).toContain(`${JSON.stringify(ID)}  reason=rejected`);
    expect(dead.stdout).toContain('plain  reason=rejected');
    for (const output of [received.stdout, job.stdout, dead.stdout]) {
      expect(output).not.toContain(ESCAPE);
    }
  });
});
