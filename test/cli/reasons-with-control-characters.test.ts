import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// A dead-letter reason is free text a consumer writes (R14, R18), often an error's message with
// its stack lines; a group key is a producer's. Text output shows one holding a control
// character as a JSON string, as it shows such an id: raw, a newline would start what reads as
// another dead job, and an escape sequence would act on the reader's terminal.

let server: TestServer;
let env: Record<string, string>;
const run = (argv: string[]) => leaseq(argv, { env });
const ESCAPE = '\u001b';
const REASON = `TypeError: x is undefined\n    at handle (worker.js:3)\nfake  reason=ok\n${ESCAPE}[31mred`;
const GROUP = `order\n${ESCAPE}[1m7`;

beforeAll(async () => {
  server = await startTestServer();
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterAll(async () => {
  await server.close();
});

describe('text output of reasons and group keys with control characters', () => {
  it('shows them as JSON strings in dead list and job, one line each', async () => {
    const queue = await server.broker.queue('reasons');
    await queue.publishBatch([{ id: 'broken', group: GROUP }, { id: 'plain' }]);
    for (const delivery of await queue.receive({ max: 2 })) {
      await queue.nack(delivery.token, {
        requeue: false,
        reason: delivery.id === 'broken' ? REASON : 'card declined',
      });
    }
    const dead = await run(['dead', 'list', 'reasons']);
    expect(dead.code).toBe(0);
    const lines = dead.stdout.split('\n');
    expect(lines[0]).toMatch(/^broken {2}reason="TypeError: x is undefined\\n {4}at handle/);
    expect(lines[1]?.replace(/ after \d+ms$/, '')).toBe(
      `  token 1: rejected (${JSON.stringify(REASON)})`,
    );
    expect(lines[2]).toMatch(/^plain {2}reason=card declined deliveries=1 /);
    expect(lines[3]).toMatch(/^ {2}token 2: rejected \(card declined\) after \d+ms$/);
    expect(lines.slice(4)).toEqual(['']);

    const job = await run(['job', 'reasons', 'broken']);
    expect(job.code).toBe(0);
    const [head, ...rest] = job.stdout.split('\n');
    expect(head).toContain(`group=${JSON.stringify(GROUP)} `);
    expect(head).toContain(`reason=${JSON.stringify(REASON)} `);
    // The head, the payload-less history's one attempt, and the end.
    expect(rest).toHaveLength(2);
    for (const output of [dead.stdout, job.stdout]) expect(output).not.toContain(ESCAPE);
  });
});
