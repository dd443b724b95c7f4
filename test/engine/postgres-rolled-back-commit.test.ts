import { beforeAll, describe, expect, it } from 'vitest';
import { ConflictError, open } from '../../src/index.js';
import { POSTGRES_URL, postgresSkipReason, uniqueQueueName } from '../crash/postgres.js';

/**
 * A statement of a caller's transaction failed and the caller caught its error and returned:
 * PostgreSQL has aborted the transaction, and answers its COMMIT with ROLLBACK, not an error.
 * The transaction must fail then, saying nothing of it committed: it resolved as if its ack and
 * inbox claim had committed, and the job was worked again.
 */
let skip: string | undefined;

beforeAll(async () => {
  skip = await postgresSkipReason();
});

describe('PostgreSQL: a caller transaction PostgreSQL rolled back at COMMIT', () => {
  it('fails with ConflictError, and its ack is not committed', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(POSTGRES_URL);
    const name = uniqueQueueName('rolled-back');
    try {
      const queue = await broker.queue(name, { visibility: 30_000 });
      await queue.publish({ id: 'job-1' });
      const [job] = await queue.receive({ max: 1 });
      const token = job?.token as number;
      let acked: boolean | undefined;
      let caught: unknown;
      const outcome = await broker
        .transaction(async (tx) => {
          acked = await tx.ack(name, token);
          // An optional statement that fails (a slow audit insert, say), its error handled.
          await tx.query('SELECT 1 / 0').catch((error: unknown) => {
            caught = error;
          });
          return 'done';
        })
        .catch((error: unknown) => error);
      expect(acked).toBe(true);
      expect((caught as { code?: string }).code).toBe('22012');
      expect(outcome).toBeInstanceOf(ConflictError);
      expect((outcome as Error).message).toMatch(/rolled back.*nothing of it was committed/);
      expect((outcome as Error).message).toContain('division by zero');
      expect((outcome as Error).cause).toBe(caught);
      // The delivery is still live: the ack was rolled back.
      expect(await queue.ack(token)).toBe(true);
    } finally {
      await broker.deleteQueue(name).catch(() => undefined);
      await broker.close();
    }
  });

  it('fails for an inbox claim alone too, which stays unclaimed', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(POSTGRES_URL);
    const consumer = uniqueQueueName('inbox');
    try {
      const outcome = broker.transaction(async (tx) => {
        expect(await tx.claimOnce(consumer, 'job-1')).toBe(true);
        await tx.query('SELECT 1 / 0').catch(() => undefined);
      });
      await expect(outcome).rejects.toBeInstanceOf(ConflictError);
      expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'job-1'))).toBe(true);
    } finally {
      await broker.transaction((tx) => tx.pruneInbox(consumer, 0)).catch(() => undefined);
      await broker.close();
    }
  });

  it('a transaction without a failed statement still commits', async (context) => {
    if (skip !== undefined) context.skip(skip);
    const broker = await open(POSTGRES_URL);
    const consumer = uniqueQueueName('inbox-ok');
    try {
      expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'job-1'))).toBe(true);
      expect(await broker.transaction((tx) => tx.claimOnce(consumer, 'job-1'))).toBe(false);
    } finally {
      await broker.transaction((tx) => tx.pruneInbox(consumer, 0)).catch(() => undefined);
      await broker.close();
    }
  });
});
