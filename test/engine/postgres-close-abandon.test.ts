import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClosedError,
  ConnectionLostError,
  open,
  StorageUnavailableError,
  ValidationError,
} from '../../src/index.js';
import { DEFAULT_CONFIG, startServer } from '../../src/server/index.js';
import { postgresSkipReason } from '../crash/postgres.js';
import { call, startTestServer } from '../server/helpers.js';
import { type ScratchDatabase, scratchDatabase } from './postgres-scratch.js';
import { settlesWithin } from './settles-within.js';

/**
 * A close with a deadline (`close({ signal })`, and `leaseq serve`'s shutdown timeout) ends
 * even while another transaction's lock holds a call: the call is abandoned (its transaction
 * rolled back), not waited for until the lock goes.
 */
let skip: string | undefined;
let scratch: ScratchDatabase | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
  if (skip === undefined) scratch = await scratchDatabase('close_abandon');
});

afterAll(async () => {
  await scratch?.drop();
});

function url(): string {
  if (scratch === undefined) throw new Error('no scratch database');
  return scratch.url();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Another connection holding the jobs table's lock (or `table`'s) until `release()`. */
async function holdJobsTable(table = 'leaseq_jobs'): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url() });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end();
    },
  };
}

describe('PostgreSQL: a close that cannot wait abandons the calls a lock holds', () => {
  it('close with a signal fails the held publish with ClosedError, writes nothing and returns', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    await broker.queue('held');
    const lock = await holdJobsTable();
    try {
      const publish = broker
        .handle('held')
        .publish({ id: 'held-1', payload: 'x' })
        .catch((error: unknown) => error);
      await sleep(200);
      const closing = broker.close({ signal: AbortSignal.timeout(100) });
      expect(await settlesWithin(closing, 5000)).toBe(true);
      const error = await publish;
      expect(error).toBeInstanceOf(ClosedError);
      expect((error as Error).message).toMatch(/nothing of it was written/);
      expect(error).not.toHaveProperty('mayHaveTakenEffect');
    } finally {
      await lock.release();
    }
    const again = await open(url());
    try {
      expect((await again.handle('held').stats()).ready).toBe(0);
      expect(await again.handle('held').job('held-1')).toBeUndefined();
    } finally {
      await again.close();
    }
  });

  it('close without a signal still waits for the held call, which then completes', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    await broker.queue('waited');
    const lock = await holdJobsTable();
    let publish: Promise<unknown> | undefined;
    let closing: Promise<void> | undefined;
    try {
      publish = broker.handle('waited').publish({ id: 'waited-1' });
      await sleep(200);
      closing = broker.close();
      expect(await settlesWithin(closing, 500)).toBe(false);
    } finally {
      await lock.release();
    }
    await closing;
    expect(await publish).toMatchObject({ id: 'waited-1', duplicate: false });
    const again = await open(url());
    try {
      expect((await again.handle('waited').stats()).ready).toBe(1);
    } finally {
      await again.close();
    }
  });

  it('a later close with a signal cuts what an earlier close without one waits for', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    await broker.queue('twice');
    const lock = await holdJobsTable();
    try {
      const publish = broker
        .handle('twice')
        .publish({ id: 'twice-1' })
        .catch((error: unknown) => error);
      await sleep(200);
      const first = broker.close();
      const second = broker.close({ signal: AbortSignal.timeout(100) });
      expect(await settlesWithin(Promise.all([first, second]), 5000)).toBe(true);
      expect(await publish).toBeInstanceOf(ClosedError);
    } finally {
      await lock.release();
    }
  });

  it('a caller transaction that catches the cut and returns fails with ClosedError, nothing written', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    await broker.queue('caught');
    const lock = await holdJobsTable();
    try {
      const transaction = broker
        .transaction(async (tx) => {
          await tx.publish('caught', { id: 'caught-1' }).catch(() => undefined);
        })
        .catch((error: unknown) => error);
      await sleep(200);
      expect(await settlesWithin(broker.close({ signal: AbortSignal.timeout(100) }), 5000)).toBe(
        true,
      );
      expect(await transaction).toBeInstanceOf(ClosedError);
    } finally {
      await lock.release();
    }
    const again = await open(url());
    try {
      expect(await again.handle('caught').job('caught-1')).toBeUndefined();
    } finally {
      await again.close();
    }
  });

  it('a one-statement ack cut while it waits fails as maybe done, named as the close', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(url());
    const queue = await broker.queue('direct');
    await queue.publish({ id: 'direct-1' });
    const [delivery] = await queue.receive();
    const lock = await holdJobsTable();
    try {
      const ack = queue.ack(delivery?.token as number).catch((error: unknown) => error);
      await sleep(200);
      expect(await settlesWithin(broker.close({ signal: AbortSignal.timeout(100) }), 5000)).toBe(
        true,
      );
      const error = await ack;
      expect(error).toBeInstanceOf(StorageUnavailableError);
      expect((error as Error).message).toMatch(/closed while this call's commit was under way/);
      expect(error).toMatchObject({ mayHaveTakenEffect: true });
    } finally {
      await lock.release();
    }
  });

  it('a connection checked after a crash, waiting on a lock, is cut too', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const setup = await open(url());
    await setup.queue('after-crash');
    await setup.close();
    // As a crash leaves it: the next connection's first statement takes the queues' locks.
    const admin = new pg.Client({ connectionString: url() });
    await admin.connect();
    await admin.query('DELETE FROM leaseq_alive');
    await admin.end();
    const broker = await open(url());
    const lock = await holdJobsTable('leaseq_queues');
    try {
      const publish = broker
        .handle('after-crash')
        .publish({ id: 'after-crash-1' })
        .catch((error: unknown) => error);
      await sleep(200);
      expect(await settlesWithin(broker.close({ signal: AbortSignal.timeout(100) }), 5000)).toBe(
        true,
      );
      expect(await publish).toBeInstanceOf(ClosedError);
    } finally {
      await lock.release();
    }
  });

  it('leaseq serve shutdown ends at its timeout while a publish waits on a lock', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const lines: Record<string, unknown>[] = [];
    const server = await startServer(
      { ...DEFAULT_CONFIG, storage: url(), port: 0, shutdownTimeoutMs: 200 },
      {
        logDestination: {
          write: (text: string) => {
            for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line));
          },
        },
      },
    );
    await call(server.url, 'PUT', '/v1/queues/served', { body: {} });
    const lock = await holdJobsTable();
    try {
      const stuck = call(server.url, 'POST', '/v1/queues/served/jobs', {
        body: { id: 'served-1' },
      }).catch((error: unknown) => error);
      await sleep(200);
      const started = Date.now();
      expect(await settlesWithin(server.close(), 5000)).toBe(true);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await stuck).toBeInstanceOf(Error);
      expect(lines.map((line) => line.msg)).toContain('stopped');
    } finally {
      await lock.release();
    }
    const again = await open(url());
    try {
      expect(await again.handle('served').job('served-1')).toBeUndefined();
    } finally {
      await again.close();
    }
  });
});

describe('PostgreSQL: leaseq serve with stream frames held by a lock', () => {
  it('shutdown ends at its timeout while a stream publish and a scheduler pass wait on a lock', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const server = await startServer(
      { ...DEFAULT_CONFIG, storage: url(), port: 0, shutdownTimeoutMs: 200 },
      { logDestination: { write: () => {} } },
    );
    // The remote client sends its calls over the stream.
    const remote = await open(server.url);
    await remote.queue('streamed');
    const lock = await holdJobsTable();
    let publish: Promise<unknown> | undefined;
    try {
      publish = remote
        .handle('streamed')
        .publish({ id: 'streamed-1' })
        .catch((error: unknown) => error);
      // Long enough for a pass of the server's scheduler (one a second) to wait behind the held
      // call: the shutdown stops the scheduler before it shuts the stream's connections down.
      await sleep(1500);
      expect(await settlesWithin(server.close(), 5000)).toBe(true);
      // Answered CLOSED, or cut at the timeout: either way not done.
      const error = await publish;
      expect(error instanceof ClosedError || error instanceof ConnectionLostError).toBe(true);
    } finally {
      await lock.release();
      await publish;
      await remote.close({ signal: AbortSignal.timeout(100) });
    }
    const again = await open(url());
    try {
      expect(await again.handle('streamed').job('streamed-1')).toBeUndefined();
    } finally {
      await again.close();
    }
  });
});

describe('close options', () => {
  it('refuses options that are not an object, unknown names and a signal that is not one', async () => {
    for (const options of ['soon', null, [], { signall: AbortSignal.timeout(10) }, { signal: 5 }]) {
      const broker = await open('memory:');
      await expect(broker.close(options as never)).rejects.toBeInstanceOf(ValidationError);
      // Refused, it changed nothing: the broker still works, and closes.
      await broker.queue('still-open');
      await broker.close();
    }
  });

  it('a remote broker refuses them too, and its close with an aborted signal returns', async () => {
    const server = await startTestServer();
    try {
      const remote = await open(server.baseUrl);
      await expect(remote.close({ signall: 1 } as never)).rejects.toBeInstanceOf(ValidationError);
      await remote.queue('remote-open');
      await remote.close({ signal: AbortSignal.abort() });
      await expect(remote.queue('remote-open')).rejects.toBeInstanceOf(ClosedError);
    } finally {
      await server.close();
    }
  });
});
