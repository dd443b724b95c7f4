import { describe, expect, it } from 'vitest';
import { Gate, MemoryInbox } from '../../src/testing/index.js';

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
