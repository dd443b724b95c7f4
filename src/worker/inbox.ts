import { AsyncLocalStorage } from 'node:async_hooks';
import { UnsupportedError } from '../core/errors.js';
import { Problems, show } from '../core/validate.js';
import type { Handler, JobContext } from './job.js';

/** What `processOnce` did. */
export type InboxResult<T> =
  | {
      /** The effect ran now. */
      processed: true;
      /** What it returned. */
      value: T;
    }
  | {
      /** The job was processed before: the effect did not run again. */
      processed: false;
    };

/**
 * A consumer's record of the jobs whose effects it has applied: with it, a redelivered job
 * (ack lost, lease expired after the effect) has its effect once. The record and the effect
 * must commit together: in one database transaction for the SQL inboxes (`Tx` is then that
 * transaction's handle), in one synchronous step for the in-memory one.
 */
export interface Inbox<Tx = undefined> {
  /**
   * Runs `effect` unless `(consumer, jobId)` was already processed, and records it as
   * processed together with the effect. When the effect throws, nothing is recorded and the
   * error propagates. Two concurrent calls for the same key never both run the effect. A
   * consumer or job id that is not storable text (R18), or an effect that is not a function,
   * is refused with a ValidationError before anything is claimed or run.
   */
  processOnce<T>(
    consumer: string,
    jobId: string,
    effect: (tx: Tx) => Promise<T> | T,
  ): Promise<InboxResult<T>>;
}

/**
 * The in-memory inbox, for tests and single-process consumers whose effects live in the same
 * memory. The effect's own changes must be all-or-nothing (throw before changing anything).
 */
export class MemoryInbox implements Inbox<undefined> {
  private readonly processed = new Map<string, Set<string>>();
  private readonly running = new Map<string, Promise<unknown>>();
  /** The effect of this inbox that the code running now was called from, while it runs. */
  private readonly effectOf = new AsyncLocalStorage<{ open: boolean }>();
  /** Effects running now: the store is disabled at none (enabled, it slows every promise). */
  private effects = 0;

  async processOnce<T>(
    consumer: string,
    jobId: string,
    effect: (tx: undefined) => Promise<T> | T,
  ): Promise<InboxResult<T>> {
    // The keys the SQL inboxes take (tx.claimOnce), so that code tried here runs there too.
    checkProcessOnce(consumer, jobId, effect);
    // Called from an effect, it would run that job's effect a second time (the same key, before
    // the first recorded it) or wait for the effect that waits for it; TransactionalInbox
    // refuses it as a transaction begun inside another.
    if (this.effectOf.getStore()?.open) {
      throw new UnsupportedError(
        'processOnce was called inside the effect of another processOnce of this inbox: it would run an effect twice or wait for ever, and a SQL inbox refuses it (one transaction at a time); do the work in the outer effect',
      );
    }
    const key = JSON.stringify([consumer, jobId]);
    // A second call for the same key waits for the first, as a row lock would make it.
    for (let pending = this.running.get(key); pending; pending = this.running.get(key)) {
      await pending.catch(() => undefined);
    }
    if (this.has(consumer, jobId)) return { processed: false };
    const scope = { open: true };
    this.effects += 1;
    const run = this.effectOf.run(scope, async () => effect(undefined));
    this.running.set(key, run);
    try {
      const value = await run;
      this.record(consumer, jobId);
      return { processed: true, value };
    } finally {
      // Work the effect left behind, still running after it, may call again.
      scope.open = false;
      this.running.delete(key);
      this.effects -= 1;
      if (this.effects === 0) this.effectOf.disable();
    }
  }

  /** Whether `(consumer, jobId)` was processed. */
  has(consumer: string, jobId: string): boolean {
    return this.processed.get(consumer)?.has(jobId) ?? false;
  }

  /** How many jobs `consumer` has processed. */
  size(consumer: string): number {
    return this.processed.get(consumer)?.size ?? 0;
  }

  private record(consumer: string, jobId: string): void {
    let ids = this.processed.get(consumer);
    if (ids === undefined) {
      ids = new Set();
      this.processed.set(consumer, ids);
    }
    ids.add(jobId);
  }
}

/**
 * The arguments of `processOnce`, checked by every inbox in the same words: the keys are those
 * `tx.claimOnce` takes (R18), and the effect must be a function. Refused before anything is
 * claimed, waited for or run: an effect that is not a function would otherwise fail with a
 * TypeError once a claim was made (rolled back on SQL).
 */
export function checkProcessOnce(consumer: unknown, jobId: unknown, effect: unknown): void {
  const problems = new Problems();
  problems.id('consumer', consumer);
  problems.id('jobId', jobId);
  effectProblem(problems, effect);
  problems.throwIfAny();
}

function effectProblem(problems: Problems, effect: unknown): void {
  if (typeof effect !== 'function') {
    problems.list.push(`effect must be a function, got ${show(effect)}`);
  }
}

/**
 * Wraps a handler so that its effect runs through the inbox, keyed by the job id: a job whose
 * effect was already applied is acked as a duplicate instead of running again. What the effect
 * returns (`tx.run`'s count of rows, say) is awaited and ignored. An inbox without
 * `processOnce`, a consumer that is not storable text (R18) or an effect that is not a function
 * is refused here, with a ValidationError, rather than failing every job the handler is given.
 */
export function inboxHandler<P, Tx = undefined>(
  inbox: Inbox<Tx>,
  consumer: string,
  effect: (tx: Tx, ctx: JobContext<P>) => unknown,
): Handler<P> {
  const problems = new Problems();
  if (typeof (inbox as Partial<Inbox<Tx>> | null | undefined)?.processOnce !== 'function') {
    problems.list.push(
      `inbox must be an Inbox (MemoryInbox, TransactionalInbox: with processOnce), got ${show(inbox)}`,
    );
  }
  problems.id('consumer', consumer);
  effectProblem(problems, effect);
  problems.throwIfAny();
  return async (_job, ctx) => {
    const result = await inbox.processOnce(consumer, ctx.id, (tx) => effect(tx, ctx));
    if (!result.processed) ctx.duplicate();
  };
}
