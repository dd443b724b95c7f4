import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { MemoryInbox } from '../../src/testing/index.js';
import { inboxHandler, TransactionalInbox } from '../../src/worker/index.js';

/** Effects that are no function, as a caller without types can pass them. */
const notFunctions: [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['a string', 'INSERT INTO ledger'],
  ['an object', { run: () => 1 }],
];

async function refusal(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('an inbox effect that is not a function', () => {
  it.each(notFunctions)(
    'MemoryInbox refuses %s with a ValidationError and records nothing',
    async (_, effect) => {
      const inbox = new MemoryInbox();
      const error = await refusal(() =>
        inbox.processOnce('billing', 'job-1', effect as () => unknown),
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
      expect((error as ValidationError).issues).toEqual([
        expect.stringMatching(/^effect must be a function, got /),
      ]);
      expect(inbox.has('billing', 'job-1')).toBe(false);
      expect(await inbox.processOnce('billing', 'job-1', () => 'ran')).toEqual({
        processed: true,
        value: 'ran',
      });
    },
  );

  it.each(notFunctions)(
    'TransactionalInbox over SQLite refuses %s with a ValidationError, claims nothing and opens no transaction',
    async (_, effect) => {
      const broker = await open('sqlite::memory:');
      try {
        let transactions = 0;
        const counted = {
          transaction: ((work: Parameters<typeof broker.transaction>[0]) => {
            transactions += 1;
            return broker.transaction(work);
          }) as typeof broker.transaction,
        };
        const inbox = new TransactionalInbox(counted);
        const error = await refusal(() =>
          inbox.processOnce('billing', 'job-1', effect as () => unknown),
        );
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
        // The same words as the in-memory inbox.
        const memory = await refusal(() =>
          new MemoryInbox().processOnce('billing', 'job-1', effect as () => unknown),
        );
        expect((error as ValidationError).message).toBe((memory as ValidationError).message);
        expect(transactions).toBe(0);
        expect(await inbox.processOnce('billing', 'job-1', () => 'ran')).toEqual({
          processed: true,
          value: 'ran',
        });
      } finally {
        await broker.close();
      }
    },
  );

  it('bad keys and a bad effect are named together', async () => {
    const error = await refusal(() =>
      new MemoryInbox().processOnce('', 'job-1', 7 as unknown as () => unknown),
    );
    expect((error as ValidationError).issues).toEqual([
      'consumer must be a string of 1 to 256 characters, got ""',
      'effect must be a function, got 7',
    ]);
  });

  it('inboxHandler refuses a bad effect or consumer when it is called, not at each job', () => {
    const inbox = new MemoryInbox();
    expect(() => inboxHandler(inbox, 'billing', undefined as unknown as () => unknown)).toThrow(
      ValidationError,
    );
    expect(() => inboxHandler(inbox, '', () => undefined)).toThrow(ValidationError);
    expect(typeof inboxHandler(inbox, 'billing', () => undefined)).toBe('function');
  });
});
