import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { StorageUnavailableError } from '../../src/index.js';
import { queueName } from '../conformance/engines.js';
import {
  deadJobs,
  readyJobs,
  type SteppedServer,
  startSteppedServer,
} from '../server/stepped-failures.js';
import { serverStorages } from '../server/storages.js';
import { leaseq } from './context.js';

// On SQLite a redrive or move takes steps of 1,000 jobs, each kept once done (R20): a command
// that an error ends says, after the error, how many jobs were redriven or moved before it.

const sqlite = (await serverStorages()).find((storage) => storage.name === 'sqlite');

let server: SteppedServer;
let env: Record<string, string>;

beforeAll(async () => {
  // maxBatch above a step: a batch of the command line can take several steps.
  server = await startSteppedServer(sqlite?.url as string, { maxBatch: 5000 });
  env = { LEASEQ_SERVER: server.baseUrl };
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  await server.close();
});

const disk = () => new StorageUnavailableError('the disk went away');

describe('a redrive or move ended by an error after some of its steps', () => {
  for (const transport of ['stream', 'http']) {
    it(`queue move says how many jobs were moved before the error (${transport})`, async () => {
      const from = await server.broker.queue(queueName('from'));
      const to = await server.broker.queue(queueName('to'));
      await readyJobs(from, 'j', 2500);
      server.failAt(3, disk);
      const run = await leaseq(
        ['queue', 'move', from.name, '--to', to.name, '--transport', transport],
        { env },
      );
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        /^leaseq queue move: STORAGE_UNAVAILABLE: the storage is unavailable\n2000 jobs were moved before the error\n/,
      );
      expect(await to.stats()).toMatchObject({ ready: 2000 });
    });
  }

  it('queue move with --json says it on stderr as well, and nothing when none moved', async () => {
    const from = await server.broker.queue(queueName('from'));
    const to = await server.broker.queue(queueName('to'));
    await readyJobs(from, 'j', 1500);
    server.failAt(2, disk);
    const some = await leaseq(['queue', 'move', from.name, '--to', to.name, '--json'], { env });
    expect(some).toMatchObject({ code: 1, stdout: '' });
    expect(some.stderr).toContain('\n1000 jobs were moved before the error\n');
    server.failAt(1, disk);
    const none = await leaseq(['queue', 'move', from.name, '--to', to.name], { env });
    expect(none).toMatchObject({ code: 1, stdout: '' });
    expect(none.stderr).toMatch(/^leaseq queue move: STORAGE_UNAVAILABLE: /);
    expect(none.stderr).not.toContain('before the error');
  });

  it('dead redrive counts the steps of the batch the error ended', async () => {
    const queue = await server.broker.queue(queueName('dead'));
    await deadJobs(queue, 'd', 2500);
    server.failAt(2, disk);
    const run = await leaseq(['dead', 'redrive', queue.name, '--batch-size', '2500'], { env });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(
      /^leaseq dead redrive: STORAGE_UNAVAILABLE: the storage is unavailable\n1000 jobs were redriven before the error\n/,
    );
    expect(await queue.stats()).toMatchObject({ ready: 1000, dead: 1500 });
  });

  it('dead redrive adds the batches done before the one the error ended', async () => {
    const queue = await server.broker.queue(queueName('dead'));
    await deadJobs(queue, 'd', 2500);
    // The third batch (the last 500 ids) fails at its first step: the two before it took 2,000.
    server.failAt(1, disk, 3);
    const batches = await leaseq(['dead', 'redrive', queue.name, '--batch-size', '1000'], {
      env,
    });
    expect(batches).toMatchObject({ code: 1, stdout: '' });
    expect(batches.stderr).toContain('\n2000 jobs were redriven before the error\n');
    expect(await queue.stats()).toMatchObject({ ready: 2000, dead: 500 });
  });
});
