import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { Gate, MemoryInbox } from '../../src/testing/index.js';
import { TransactionalInbox } from '../../src/worker/index.js';

describe('MemoryInbox', () => {
  it('runs an effect once per (consumer, job id)', async () => {
    const inbox = new MemoryInbox();
    let runs = 0;
    const effect = () => {
      runs += 1;
      return runs;
    };
    expect(await inbox.processOnce('billing', 'a', effect)).toEqual({ processed: true, value: 1 });
    expect(await inbox.processOnce('billing', 'a', effect)).toEqual({ processed: false });
    expect(await inbox.processOnce('billing', 'b', effect)).toEqual({ processed: true, value: 2 });
    expect(await inbox.processOnce('shipping', 'a', effect)).toEqual({ processed: true, value: 3 });
    expect(inbox.has('billing', 'a')).toBe(true);
    expect(inbox.size('billing')).toBe(2);
  });

  it('an effect that throws is not recorded; the error propagates and a retry runs it', async () => {
    const inbox = new MemoryInbox();
    await expect(
      inbox.processOnce('billing', 'a', async () => {
        throw new Error('card declined');
      }),
    ).rejects.toThrow('card declined');
    expect(inbox.has('billing', 'a')).toBe(false);
    expect(await inbox.processOnce('billing', 'a', () => 'ok')).toEqual({
      processed: true,
      value: 'ok',
    });
  });

  it('a concurrent call for the same key waits for the first and does not run again', async () => {
    const inbox = new MemoryInbox();
    const gate = new Gate();
    let runs = 0;
    const slow = async () => {
      runs += 1;
      await gate.pass();
    };
    const first = inbox.processOnce('billing', 'a', slow);
    const second = inbox.processOnce('billing', 'a', slow);
    await gate.arrivedAt(1);
    gate.open();
    expect(await first).toMatchObject({ processed: true });
    expect(await second).toEqual({ processed: false });
    expect(runs).toBe(1);
  });

  it('when the first of two concurrent calls fails, the second runs the effect', async () => {
    const inbox = new MemoryInbox();
    const gate = new Gate();
    const first = inbox.processOnce('billing', 'a', async () => {
      await gate.pass();
      throw new Error('rolled back');
    });
    const second = inbox.processOnce('billing', 'a', () => 'second');
    gate.open();
    await expect(first).rejects.toThrow('rolled back');
    expect(await second).toEqual({ processed: true, value: 'second' });
  });
});

describe('MemoryInbox keys', () => {
  const bad: [string, unknown, unknown][] = [
    ['an empty consumer', '', 'job-1'],
    ['an empty job id', 'billing', ''],
    ['a NUL in the job id', 'billing', 'a\u0000b'],
    ['a lone surrogate in the consumer', 'bill\ud800', 'job-1'],
    ['a job id that is no string', 'billing', 7],
    ['a job id too long', 'billing', 'x'.repeat(1025)],
  ];

  it.each(bad)('refuses %s as the SQL inboxes do, running nothing', async (_, consumer, jobId) => {
    const inbox = new MemoryInbox();
    let runs = 0;
    const memory = await inbox
      .processOnce(consumer as string, jobId as string, () => {
        runs += 1;
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(memory).toBeInstanceOf(ValidationError);
    expect((memory as ValidationError).code).toBe('INVALID_ARGUMENT');
    expect(runs).toBe(0);
    expect(inbox.size(consumer as string)).toBe(0);
    // The same words as the transactional inbox's claim over SQLite.
    const broker = await open('sqlite::memory:');
    try {
      const sql = await new TransactionalInbox(broker)
        .processOnce(consumer as string, jobId as string, () => undefined)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(sql).toBeInstanceOf(ValidationError);
      expect((memory as ValidationError).message).toBe((sql as ValidationError).message);
    } finally {
      await broker.close();
    }
  });
});

describe('pruneInbox', () => {
  it('refuses a bad consumer and a bad age together, in the words of every check, and forgets nothing', async () => {
    const broker = await open('sqlite::memory:');
    try {
      const inbox = new TransactionalInbox(broker);
      await inbox.processOnce('billing', 'a', () => undefined);
      const refused = await broker
        .transaction((tx) => tx.pruneInbox('', '5' as unknown as number))
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as ValidationError).code).toBe('INVALID_ARGUMENT');
      expect((refused as ValidationError).issues).toEqual([
        'consumer must be a string of 1 to 256 characters, got ""',
        'maxAgeMs must be an integer ≥ 0, got "5"',
      ]);
      expect(await inbox.processOnce('billing', 'a', () => undefined)).toEqual({
        processed: false,
      });
    } finally {
      await broker.close();
    }
  });
});
