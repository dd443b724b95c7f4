import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Broker, Queue } from '../../src/broker/index.js';
import { runCli } from '../../src/cli/run.js';
import { StorageUnavailableError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { createApp } from '../../src/server/index.js';
import { withWrappedQueues } from '../server/helpers.js';
import { fakeContext, type Run } from './context.js';

// STORAGE_UNAVAILABLE comes from two places: the client could not reach a server, or a server
// answered that its storage failed. The hint says which: asking whether `leaseq serve` runs
// there sends an operator to look at a server that is up.

const FAILED = 'postgres://db/leaseq refuses the role a privilege (permission denied)';

let real: Broker;
let baseUrl: string;
let closeApp: () => Promise<void>;

beforeAll(async () => {
  real = await open('memory:');
  await real.queue('q');
  const failing = (queue: Queue) =>
    Object.assign(Object.create(queue), {
      stats: () => Promise.reject(new StorageUnavailableError(FAILED)),
      execute: () => Promise.reject(new StorageUnavailableError(FAILED)),
    }) as Queue;
  const app = await createApp({
    broker: withWrappedQueues(real, failing),
    receiptSecret: 'test-secret-of-at-least-32-characters',
  });
  baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  closeApp = () => app.close();
});

afterAll(async () => {
  await closeApp();
  await real.close();
});

async function run(argv: string[]): Promise<Run> {
  const { context, stdout, stderr } = fakeContext({ env: { LEASEQ_SERVER: baseUrl } });
  const code = await runCli(argv, context);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('a server whose storage fails', () => {
  it.each([[['queue', 'stats', 'q']], [['cancel', 'q', 'a', 'b', '--transport', 'http']]])(
    '%j: the hint says the server answered, not to start one',
    async (argv) => {
      const result = await run(argv);
      expect(result.code).toBe(1);
      // The server does not pass its storage's words on (they name the storage); its log has them.
      expect(result.stderr).toContain('STORAGE_UNAVAILABLE: the storage is unavailable');
      expect(result.stderr).toContain(
        "(the server answered, but its storage failed: see the server's log and GET /readyz)",
      );
      expect(result.stderr).not.toContain('running there');
    },
  );

  it('a server that cannot be reached still gets the hint to check it runs', async () => {
    const { context, stderr } = fakeContext({ env: { LEASEQ_SERVER: 'http://127.0.0.1:1' } });
    expect(await runCli(['queue', 'stats', 'q'], context)).toBe(1);
    expect(stderr.text).toContain('is `leaseq serve` running there?');
  });
});
