import { describe, expect, it } from 'vitest';
import { UnsupportedError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { MemoryInbox } from '../../src/testing/index.js';
import { TransactionalInbox } from '../../src/worker/index.js';

async function outcome(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    (value) => ({ value }),
    (error: unknown) => error,
  );
}

describe('processOnce called inside an effect of the same inbox', () => {
  it('MemoryInbox refuses a call for the same job made as the effect starts: the effect runs once', async () => {
    const inbox = new MemoryInbox();
    let runs = 0;
    let inner: Promise<unknown> | undefined;
    const outer = await inbox.processOnce('ledger', 'pay-1', () => {
      runs += 1;
      inner = inbox.processOnce('ledger', 'pay-1', () => {
        runs += 1;
      });
      return 'outer';
    });
    expect(outer).toEqual({ processed: true, value: 'outer' });
    expect(await outcome(inner as Promise<unknown>)).toBeInstanceOf(UnsupportedError);
    expect(runs).toBe(1);
    expect(inbox.size('ledger')).toBe(1);
  });

  it('MemoryInbox refuses a call for another job made after an await, as a SQL inbox does', async () => {
    const inbox = new MemoryInbox();
    const error = await outcome(
      inbox.processOnce('ledger', 'pay-1', async () => {
        await Promise.resolve();
        return inbox.processOnce('ledger', 'pay-2', () => 'inner');
      }),
    );
    expect(error).toBeInstanceOf(UnsupportedError);
    expect((error as UnsupportedError).code).toBe('UNSUPPORTED');
    // The outer effect failed with it: neither job is recorded, both run later.
    expect(inbox.has('ledger', 'pay-1')).toBe(false);
    expect(inbox.has('ledger', 'pay-2')).toBe(false);
    expect(await inbox.processOnce('ledger', 'pay-2', () => 'later')).toEqual({
      processed: true,
      value: 'later',
    });
  });

  it('TransactionalInbox refuses the same call with the same kind of error', async () => {
    const broker = await open('sqlite::memory:');
    try {
      const inbox = new TransactionalInbox(broker);
      const error = await outcome(
        inbox.processOnce('ledger', 'pay-1', () =>
          inbox.processOnce('ledger', 'pay-2', () => 'inner'),
        ),
      );
      expect(error).toBeInstanceOf(UnsupportedError);
    } finally {
      await broker.close();
    }
  });

  it('work an effect left running may call once the effect ended, and other inboxes always', async () => {
    const inbox = new MemoryInbox();
    const other = new MemoryInbox();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let later: Promise<unknown> | undefined;
    const outer = await inbox.processOnce('ledger', 'pay-1', async () => {
      later = released.then(() => inbox.processOnce('ledger', 'pay-3', () => 'after'));
      return other.processOnce('ledger', 'pay-2', () => 'other');
    });
    expect(outer).toEqual({ processed: true, value: { processed: true, value: 'other' } });
    release();
    expect(await later).toEqual({ processed: true, value: 'after' });
  });

  it('concurrent calls outside any effect still wait for each other and run the effect once', async () => {
    const inbox = new MemoryInbox();
    let runs = 0;
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        inbox.processOnce('ledger', 'pay-1', async () => {
          runs += 1;
          await Promise.resolve();
        }),
      ),
    );
    expect(results.map((result) => result.processed)).toEqual([true, false, false]);
    expect(runs).toBe(1);
  });
});
