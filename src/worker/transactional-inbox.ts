import type { Broker, BrokerTransaction } from '../broker/queue.js';
import { ValidationError } from '../core/errors.js';
import { show } from '../core/validate.js';
import { checkProcessOnce, type Inbox, type InboxResult } from './inbox.js';

/**
 * The inbox of the SQL engines: the claim of `(consumer, jobId)` and the effect run in one
 * transaction of the engine's database (`broker.transaction`, `tx.claimOnce`), so they commit
 * together or not at all. The effect gets the transaction: write your state with `tx.run`.
 * Keep it to database work — the transaction holds the writer while it runs. On storage
 * without transactions (memory, HTTP) every call fails with an UnsupportedError.
 */
export class TransactionalInbox implements Inbox<BrokerTransaction> {
  constructor(private readonly database: Pick<Broker, 'transaction'>) {
    // Refused here: a queue, or a broker's promise not awaited, would otherwise fail every
    // processOnce with a TypeError, each job it guards retried until it died.
    if (typeof (database as Partial<Broker> | null | undefined)?.transaction !== 'function') {
      throw new ValidationError(
        `TransactionalInbox needs a broker (what open() resolves to: with transaction()), got ${show(database)}`,
      );
    }
  }

  async processOnce<T>(
    consumer: string,
    jobId: string,
    effect: (tx: BrokerTransaction) => Promise<T> | T,
  ): Promise<InboxResult<T>> {
    // Refused before the transaction begins (it holds the writer), in MemoryInbox's words.
    checkProcessOnce(consumer, jobId, effect);
    return this.database.transaction(async (tx): Promise<InboxResult<T>> => {
      if (!(await tx.claimOnce(consumer, jobId))) return { processed: false };
      return { processed: true, value: await effect(tx) };
    });
  }
}
