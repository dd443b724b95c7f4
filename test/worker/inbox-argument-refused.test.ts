import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import { MemoryInbox } from '../../src/testing/index.js';
import { inboxHandler, silentLogger, TransactionalInbox, work } from '../../src/worker/index.js';

/** What a caller without types can pass for the broker of a TransactionalInbox. */
const notBrokers: [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['a queue', { name: 'payments', receive: () => Promise.resolve([]) }],
  ['a broker not awaited', Promise.resolve({ transaction: () => Promise.resolve() })],
];

/** What a caller without types can pass for the inbox of inboxHandler. */
const notInboxes: [string, unknown][] = [
  ['undefined', undefined],
  ['null', null],
  ['a broker', { transaction: () => Promise.resolve() }],
  ['the TransactionalInbox class', TransactionalInbox],
];

function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('an inbox given something else than it needs', () => {
  it.each(notBrokers)(
    'new TransactionalInbox refuses %s with a ValidationError when it is made',
    (_, database) => {
      const error = thrown(
        () =>
          new TransactionalInbox(database as ConstructorParameters<typeof TransactionalInbox>[0]),
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
      expect((error as ValidationError).message).toMatch(/^TransactionalInbox needs a broker/);
    },
  );

  it.each(notInboxes)(
    'inboxHandler refuses %s as its inbox when it is called, naming it with the other problems',
    (_, inbox) => {
      const error = thrown(() => inboxHandler(inbox as MemoryInbox, '', () => undefined));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues).toEqual([
        expect.stringMatching(/^inbox must be an Inbox /),
        'consumer must be a string of 1 to 256 characters, got ""',
      ]);
    },
  );

  it('a worker is never handed a handler whose inbox fails every job', async () => {
    const broker = await open('memory:');
    try {
      const queue = await broker.queue('payments', { maxDeliveries: 1 });
      await queue.publish({ id: 'pay-1' });
      let handler: ReturnType<typeof inboxHandler> | undefined;
      const error = thrown(() => {
        handler = inboxHandler(undefined as unknown as MemoryInbox, 'ledger', () => undefined);
      });
      expect(error).toBeInstanceOf(ValidationError);
      expect(handler).toBeUndefined();
      // The job is still there for a handler made right.
      const inbox = new MemoryInbox();
      const worker = await work(
        queue,
        inboxHandler(inbox, 'ledger', () => undefined),
        {
          logger: silentLogger,
        },
      );
      await expect.poll(() => inbox.has('ledger', 'pay-1')).toBe(true);
      await worker.close();
      expect((await queue.stats()).dead).toBe(0);
    } finally {
      await broker.close();
    }
  });

  it('a TransactionalInbox over a broker and inboxHandler over it are taken', async () => {
    const broker = await open('sqlite::memory:');
    try {
      const inbox = new TransactionalInbox(broker);
      expect(typeof inboxHandler(inbox, 'ledger', () => undefined)).toBe('function');
      expect(await inbox.processOnce('ledger', 'pay-1', () => 'ran')).toEqual({
        processed: true,
        value: 'ran',
      });
    } finally {
      await broker.close();
    }
  });
});
