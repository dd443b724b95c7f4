import {
  ClockError,
  checkDeadLetterPage,
  checkDeliveryPage,
  checkInspectOptions,
  type DeadLetterPageOptions,
  type Delivery,
  type DeliveryPageOptions,
  type InspectOptions,
  LeaseqError,
  type MoveJobsOperation,
  makesJobsReady,
  NotFoundError,
  type Operation,
  type Outcome,
  type PublishOperation,
  type PublishResult,
  type PurgeOperation,
  type RedriveOperation,
  type ReserveOperation,
  reschedulesReceivers,
} from '../../core/index.js';
import { checkLookedUpId } from '../../core/text.js';
import { checkNow, isTime } from '../../core/validate.js';
import type { ServedWake } from '../engine.js';
import { nextTurn } from '../next-turn.js';
import { OperationHandle } from '../operation-handle.js';
import { pinnedQueueGone } from '../pinned.js';
import { BULK_STEP, MoveRun, withDoneCount } from './bulk-steps.js';
import { commitKindOf } from './commit-kind.js';
import type { AlsoLocks, BatchContext, QueueExecutor, Work } from './executor.js';
import { queuesMovesLock } from './move-locks.js';
import { type QueueAccess, queueOps, wakeLocallyOnCommit, wakeOnCommit } from './queue-access.js';
import { type DeadPage, deliveryOf, type EncodedPublish, type QueueOps } from './queue-ops.js';
import { expiryInUse } from './queue-row.js';
import { type Prepared, prepareOperation, runOperation } from './run-operation.js';
import type { SqlConnection } from './sql-connection.js';

/**
 * One queue of a SQL engine. A batch of operations runs inside a group-committed
 * transaction that holds the queue's row; a lone reserve or ack merges with its neighbours of
 * the same tick into one statement.
 */
export class SqlQueue extends OperationHandle {
  /** Of a pinned handle: the making of the queue its first call found (QueueRow.incarnation). */
  private making: number | undefined;

  constructor(
    readonly name: string,
    private readonly executor: QueueExecutor,
    private readonly access: QueueAccess,
    /**
     * A handle on one queue, not its name (Engine.pinnedHandle): each call checks the queue's
     * making in its own transaction, so none takes the paths that read no queue row.
     */
    private readonly pinned = false,
  ) {
    super();
  }

  execute(now: number, operations: readonly Operation[]): Promise<Outcome[]> {
    const [alone] = operations;
    if (operations.length === 1 && alone !== undefined && takesSteps(alone)) {
      return this.inSteps(now, alone);
    }
    if (operations.length === 0) {
      // Nothing to apply, but a bad clock is refused as for any batch (R2).
      return this.read(async (ops) => {
        checkNow(now, this.access.followClock ? 0 : ops.q.queueTime);
        return [];
      });
    }
    // Acks, or reserves with the same options (a stream frame of many consumers' calls), are
    // one merged call: one statement where the storage has one, in one unit as the batch.
    if (!this.pinned && operations.every((operation) => operation.type === 'ack')) {
      const lists = operations.map((operation) => operation.tokens);
      return spread(
        this.ackTokens(now, lists),
        lists.map((list) => list.length),
      );
    }
    const reserves = this.pinned ? undefined : sameReserves(operations);
    if (reserves !== undefined) {
      const maxes = reserves.map((operation) => operation.max);
      return spread(
        this.reserveMerged(now, { ...(reserves[0] as ReserveOperation), max: sum(maxes) }).then(
          (reserved) => reserved.deliveries,
        ),
        maxes,
      );
    }
    if (!this.pinned && operations.every((operation) => operation.type === 'publish')) {
      return this.publishMerged(now, operations as readonly PublishOperation[]);
    }
    // Before the transaction, which holds the queue from its first statement on.
    const prepared = operations.map(prepareOperation);
    return this.submitFor(operations, async (connection, batch) => {
      const ops = await this.ops(connection, batch);
      const outcomes = await runEach(ops, now, operations, prepared);
      const done = operations.filter((_, index) => outcomes[index]?.ok);
      // Sessions that timed out at the step (R3) may have released jobs, as a close does.
      const ready = done.some(makesJobsReady) || ops.endedSessions().length > 0;
      const freed = done.some(reschedulesReceivers);
      // A group that went on (its head acked, cancelled or moved: R24) made its next member
      // ready (or delayed) as a publish would, and room freed under the queue's prefetch lets
      // receivers go on: receivers elsewhere must hear of it too.
      if (ready || ops.othersMayGoOn()) {
        await this.letReceiversGoOn(ops, now, connection, batch);
      } else if (freed) await this.serveReceiversHere(ops, now, batch);
      return outcomes;
    });
  }

  /** Submits `work`, the call of `operations`: as their commit kind, with the queues they lock. */
  private submitFor<T>(operations: readonly Operation[], work: Work<T>): Promise<T> {
    return this.executor.submit(work, commitKindOf(operations), this.movesLock(operations));
  }

  /**
   * The other queues the moves among `operations` lock (R26: see queuesMovesLock), taken with
   * this queue's before anything else in the transaction; undefined when there are none.
   */
  private movesLock(operations: readonly Operation[]): AlsoLocks | undefined {
    const moves = operations.filter((operation) => operation.type === 'moveJobs');
    if (moves.length === 0) return undefined;
    return (connection) => queuesMovesLock(connection, this.name, moves);
  }

  /**
   * A redrive, purge or moveJobs alone in its call, in steps of at most BULK_STEP jobs, each a
   * transaction of its own, the event loop turning between them (R14, R26). In one transaction,
   * such a command over 200,000 jobs held every other call of the engine, and on SQLite the
   * whole process, for seconds. Each job moves or goes in one step, all of it, so a crash
   * between steps leaves some done and the rest as they were. The first step runs at `now`
   * (refused as any call: R2); a later one at the queue's time, if another call moved it on.
   *
   * A step that finds the queue deleted since the step before (or made again under its name:
   * the place the call keeps in its dead set or ready belongs to the queue it began on) ends
   * the call as if the delete had come right after that step: the answer counts the steps done.
   * An error that ends the call says how many jobs the steps before it took (`doneCount`).
   */
  private async inSteps(now: number, operation: SteppedOperation): Promise<Outcome[]> {
    const step = stepsOf(operation);
    let total = 0;
    /** The making of the queue the first step acted on (see QueueRow.incarnation). */
    let incarnation: number | undefined;
    try {
      for (let first = true; ; first = false) {
        if (!first) await nextTurn();
        const { count, done } = await this.executor.submit(
          async (connection, batch) => {
            const ops = await this.sameQueueOps(connection, batch, incarnation);
            if (ops === undefined) return { count: 0, done: true };
            if (first) {
              const made = ops.q.incarnation;
              batch.afterCommit(() => {
                incarnation = made;
              });
            }
            const at = first ? now : Math.max(now, ops.q.queueTime);
            const result = await step(ops, at, batch);
            if ((operation.type === 'redrive' && result.count > 0) || ops.othersMayGoOn()) {
              await this.letReceiversGoOn(ops, at, connection, batch);
            }
            return result;
          },
          commitKindOf([operation]),
          this.movesLock([operation]),
        );
        total += count;
        if (done) return [{ ok: true, value: total }];
      }
    } catch (error) {
      // A bad clock refuses the call (R2), at its first step: nothing has changed.
      if (error instanceof ClockError || !(error instanceof LeaseqError)) {
        throw withDoneCount(error, total);
      }
      return [{ ok: false, error: withDoneCount(error, total) }];
    }
  }

  /**
   * The operations of a step of `inSteps` on the queue its first step acted on (`incarnation`;
   * undefined at the first step, which acts on the queue of the name): undefined where that
   * queue was deleted since, whether or not another was made under its name.
   */
  private async sameQueueOps(
    connection: SqlConnection,
    batch: BatchContext,
    incarnation: number | undefined,
  ): Promise<QueueOps | undefined> {
    if (incarnation === undefined) return this.ops(connection, batch);
    try {
      const ops = await this.ops(connection, batch);
      return ops.q.incarnation === incarnation ? ops : undefined;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * A receive that waits (see QueueHandle.reserveOnReady): reserves for `operation` from the
   * jobs ready at `now`, or by the transaction of this engine that makes jobs ready later,
   * committed with it; none when `signal` aborts first.
   */
  reserveOnReady(now: number, operation: ReserveOperation, signal: AbortSignal, place?: number) {
    if (this.pinned) return this.reserveThenPark(now, operation, signal, place);
    // A reserve in a session or at most once takes a transaction that holds the queue's row on
    // every engine: it serves as below, so that no transaction that serves the waiting receivers
    // passes it over unseen (each of many in sessions of their own would otherwise look again
    // at every publish and ack that came during its look).
    const { session, ack } = operation;
    if (this.access.dialect.oneStatement !== undefined && session === undefined && ack !== 'auto') {
      return this.reserveThenWait(now, operation, signal, place);
    }
    // The receiver waits first; then a transaction of its own serves it from the jobs ready
    // now. A publish committed before that transaction finds it waiting and hands it its job
    // in the publish's own transaction, rather than committing (and syncing) first and leaving
    // the receiver to reserve in another transaction after it.
    const deliveries = this.access.handoffs.wait(this.name, operation, signal, place);
    const armed = this.executor.submit(async (connection, batch) => {
      const ops = await this.ops(connection, batch);
      const at = await ops.advance(now);
      // A session that ended (closed, timed out) refuses its receive, as a reserve would (R16),
      // rather than leaving it parked to the end of its wait: its end wakes the receiver.
      if (operation.session !== undefined) await ops.checkSessionOpen(operation.session);
      const served = await this.access.handoffs.serve(ops, at, batch);
      // A group's head taken at most once let its next member go on (R24): receivers of other
      // processes learn of it as of a publish; sessions that timed out at the step (R3) may have
      // released jobs, as a close does.
      if (ops.othersMayGoOn() || ops.endedSessions().length > 0) {
        await wakeOnCommit(this.access, connection, batch, this.name, this.servedBy(ops, served));
      }
      // The bound the queue keeps (exact, or a time before the next event; after `advance`, past
      // `at`), not the exact time read again: that read walks every open session, and each of
      // many receivers in sessions of their own looks at every publish.
      const next = ops.q.nextEventAt;
      return next === Number.POSITIVE_INFINITY ? undefined : next;
    }, 'lease');
    return { deliveries, armed, inPlaceBefore: true };
  }

  /**
   * Where a reserve is one statement that locks no queue row (PostgreSQL, shared by nodes), it
   * runs as that statement, merged with its neighbours; the receiver waits if it took nothing.
   */
  private reserveThenWait(
    now: number,
    operation: ReserveOperation,
    signal: AbortSignal,
    place: number | undefined,
  ) {
    let answer!: (deliveries: Delivery[] | Promise<Delivery[]>) => void;
    const deliveries = new Promise<Delivery[]>((resolve) => {
      answer = resolve;
    });
    const armed = this.reserveMerged(now, operation, true).then(
      (reserved) => {
        if (reserved.deliveries.length > 0) {
          answer(reserved.deliveries);
          return undefined;
        }
        answer(this.access.handoffs.wait(this.name, operation, signal, place, undefined, true));
        // Learnt with the reserve where it could be: no transaction of its own.
        return reserved.next === undefined ? this.nextEventAt() : reserved.next.at;
      },
      (error: unknown) => {
        answer([]);
        throw error;
      },
    );
    return { deliveries, armed };
  }

  /**
   * A pinned handle's receive that waits: a reserve of its own (which checks the queue's
   * making), then it waits among the receivers of this process in its place, served only by a
   * transaction on the making it pinned, not on a queue made again under the name.
   */
  private reserveThenPark(
    now: number,
    operation: ReserveOperation,
    signal: AbortSignal,
    place: number | undefined,
  ) {
    const reserved = this.run(now, operation);
    const deliveries = reserved.then(
      (taken) =>
        taken.length > 0
          ? taken
          : this.access.handoffs.wait(this.name, operation, signal, place, this.making, true),
      () => [],
    );
    const armed = reserved.then((taken) => (taken.length > 0 ? undefined : this.nextEventAt()));
    return { deliveries, armed };
  }

  options() {
    return this.read(async (ops) => ({ ...ops.q.options }));
  }

  queueTime() {
    return this.read(async (ops) => ops.q.queueTime);
  }

  async inspect(options?: InspectOptions) {
    const limit = checkInspectOptions(options);
    return this.read((ops) => ops.inspect(limit));
  }

  deliveries() {
    return this.read((ops) => ops.deliveries());
  }

  async deliveryPage(options?: DeliveryPageOptions) {
    const page = checkDeliveryPage(options);
    return this.read((ops) => ops.deliveryPage(page));
  }

  deadLetters() {
    return this.read((ops) => ops.deadLetters());
  }

  async deadLetterPage(options?: DeadLetterPageOptions) {
    const page = checkDeadLetterPage(options);
    return this.read((ops) => ops.deadLetterPage(page));
  }

  async job(id: string) {
    checkLookedUpId(id);
    return this.read((ops) => ops.job(id));
  }

  async nextEventAt() {
    const next = await this.read((ops) => ops.computeNextEventAt());
    return next === Number.POSITIVE_INFINITY ? undefined : next;
  }

  /** Reads change nothing but the clock's bookkeeping: their commit need not wait (R21). */
  private read<T>(action: (ops: QueueOps) => Promise<T>): Promise<T> {
    return this.executor.submit(
      async (connection, batch) => action(await this.ops(connection, batch)),
      'lease',
    );
  }

  /** Concurrent reserves at one tick with the same options take their jobs in one statement. */
  private reserveMerged(
    now: number,
    operation: ReserveOperation,
    withNextEvent = false,
  ): Promise<Reserved> {
    const { visibility, session, ack } = operation;
    const oneStatement = this.access.dialect.oneStatement;
    return this.executor.submitMerged(
      {
        key: `reserve\u0000${this.name}\u0000${this.mergeTime(now)}\u0000${visibility}\u0000${session}\u0000${ack}`,
        arg: { now, max: operation.max, withNextEvent },
        run: async (connection, batch, args: ReserveArg[]) => {
          const ops = await this.ops(connection, batch);
          const maxes = args.map((arg) => arg.max);
          const at = latest(args);
          let parts: Delivery[][];
          if (ack === 'auto' && maxes.length > 1) {
            // Each auto-acked group head lets its next member go on (R24), ready for the call
            // after it: the calls take their jobs one after the other, as each would alone.
            parts = [];
            for (const max of maxes) {
              parts.push(await ops.reserve(at, { max, visibility, session, ack }));
            }
          } else {
            parts = inParts(
              await ops.reserve(at, { max: sum(maxes), visibility, session, ack }),
              maxes,
            );
          }
          // A group whose first member was taken at most once went on (R24): its next member is
          // ready for the other receivers, not for this call (a receiver that takes fewer than it
          // asked for passes no wake-up on), as after an ack of that member; sessions that timed
          // out at the step (R3) may have released jobs, as a close does.
          if (ops.othersMayGoOn() || ops.endedSessions().length > 0) {
            await this.letReceiversGoOn(ops, at, connection, batch);
          }
          // A call that took nothing and waits next learns the bound the queue keeps (past `at`,
          // see reserveOnReady), not the exact time in a transaction of its own, which walks
          // every open session: each of many receivers in sessions of their own looks at every
          // publish.
          const kept = ops.q.nextEventAt;
          const next = { at: kept === Number.POSITIVE_INFINITY ? undefined : kept };
          return parts.map(
            (part, index): Reserved =>
              part.length === 0 && args[index]?.withNextEvent === true
                ? { deliveries: part, next }
                : { deliveries: part },
          );
        },
        // A `now` that is no time at all takes the general path, which refuses it (R2).
        ...(oneStatement === undefined || session !== undefined || ack === 'auto' || !isTime(now)
          ? {}
          : {
              direct: async (
                connection: SqlConnection,
                _batch: BatchContext,
                args: ReserveArg[],
              ) => {
                const maxes = args.map((arg) => arg.max);
                const reserved = await oneStatement.reserve(connection, {
                  queue: this.name,
                  now: latest(args),
                  max: sum(maxes),
                  visibility,
                  followClock: this.access.followClock,
                  withNextEvent: args.some((arg) => arg.withNextEvent),
                });
                if (reserved === undefined) return undefined;
                const { jobs, next } = reserved;
                if (jobs.length === 0) {
                  return args.map(
                    (): Reserved =>
                      next === undefined ? { deliveries: [] } : { deliveries: [], next },
                  );
                }
                jobs.sort((a, b) => a.token - b.token);
                const deliveries = jobs.map((row) => deliveryOf(row, row.deadline));
                return inParts(deliveries, maxes).map((part): Reserved => ({ deliveries: part }));
              },
            }),
      },
      // An auto-ack reserve removes jobs: durable like an ack (R21), so none comes back.
      ack === 'auto' ? 'durable' : 'lease',
    );
  }

  /**
   * Publishes, alone in their call, merge with the publishes of neighbouring calls (concurrent
   * producers in this process, a stream frame's publishes) into one publish of all their jobs:
   * a few statements for them all rather than a few for each, which on PostgreSQL are a round
   * trip each. One after the other they would do the same: every job goes in in call order, an
   * id published earlier in the merge is a duplicate of it (R4), and each call's results are its
   * own jobs'. Where that could differ, or where the merged publish is refused (a payload, a
   * full queue: R5 refuses a whole publish, and each call is one), each call runs on its own as
   * any batch does: a queue with a `maxLength` (R31 makes room after each publish).
   */
  private publishMerged(now: number, operations: readonly PublishOperation[]): Promise<Outcome[]> {
    // Before the transaction, which holds the queue from its first statement on.
    const prepared = operations.map(prepareOperation);
    return this.executor.submitMerged({
      key: `publish\u0000${this.name}\u0000${this.mergeTime(now)}`,
      arg: { now, operations, prepared },
      run: async (connection, batch, args: PublishArg[]) => {
        const ops = await this.ops(connection, batch);
        const at = latest(args);
        let outcomes = await publishedTogether(ops, at, args);
        if (outcomes === undefined) {
          outcomes = [];
          for (const arg of args) {
            outcomes.push(await runEach(ops, arg.now, arg.operations, arg.prepared));
          }
        }
        await this.letReceiversGoOn(ops, at, connection, batch);
        return outcomes;
      },
    });
  }

  /**
   * The time part of a merge key. A queue that follows its time runs every call at the queue's
   * time or later anyway, so concurrent calls of different `now` merge and run at the latest
   * of them; a strict queue (and a `now` that is no time, refused on its own) keeps each `now`.
   */
  private mergeTime(now: number): string {
    if (!isTime(now)) return `not a time: ${typeof now} ${String(now)}`;
    return this.access.followClock ? 'follow' : String(now);
  }

  /**
   * Concurrent acks at one tick are settled in one statement. `lists`: the tokens of each ack
   * of the call (a batch's acks, one list each); the answer is theirs one after the other.
   */
  private ackTokens(now: number, lists: readonly (readonly number[])[]): Promise<boolean[]> {
    const oneStatement = this.access.dialect.oneStatement;
    return this.executor.submitMerged({
      key: `ack\u0000${this.name}\u0000${this.mergeTime(now)}`,
      arg: { now, lists },
      run: async (connection, batch, args: AckArg[]) => {
        const ops = await this.ops(connection, batch);
        const lists = args.flatMap((arg) => arg.lists);
        let results: boolean[][];
        if (lists.length > 1 && expiryInUse(ops.q)) {
          // One ack after the other, each after its R3: a group member an ack lets go on past
          // its expiry ends at the next ack's (R3, R30), as when each runs alone.
          results = [];
          for (const list of lists) results.push(await ops.ack(latest(args), list));
        } else {
          results = inParts(
            await ops.ack(latest(args), lists.flat()),
            lists.map((list) => list.length),
          );
        }
        if (ops.othersMayGoOn() || ops.endedSessions().length > 0) {
          await this.letReceiversGoOn(ops, latest(args), connection, batch);
        } else await this.serveReceiversHere(ops, latest(args), batch);
        return inParts(
          results,
          args.map((arg) => arg.lists.length),
        ).map((parts) => parts.flat());
      },
      ...(oneStatement === undefined || !isTime(now)
        ? {}
        : {
            direct: async (connection: SqlConnection, batch: BatchContext, args: AckArg[]) => {
              // Acks of jobs in no group (the statement answers a fallback for any other) let
              // no job go on: one statement for them all is as each ack alone. Room they free
              // under the queue's prefetch or a session's, the statement itself tells receivers
              // elsewhere of, going by the options stored now (migrations 0024, 0027).
              // Receivers of this process wait on the queue: the room the acks free is theirs in
              // this transaction (see serveReceiversHere), which the statement cannot do.
              if (this.access.handoffs.sessionWaitingFor(this.name)) return undefined;
              const lists = args.map((arg) => arg.lists.flat());
              const live = await oneStatement.ack(connection, {
                queue: this.name,
                now: latest(args),
                tokens: lists.flat(),
                followClock: this.access.followClock,
              });
              if (live === undefined) return undefined;
              wakeLocallyOnCommit(this.access, batch, this.name);
              // A token named twice is acked once: the second naming is stale, as in `ack`.
              return lists.map((list) => list.map((token) => live.delete(token)));
            },
          }),
    });
  }

  /**
   * Jobs may be ready for waiting receivers (a publish, a group that went on, room freed under
   * the prefetch): those of this process are handed their jobs in this transaction, those
   * elsewhere woken once it commits.
   */
  private async letReceiversGoOn(
    ops: QueueOps,
    now: number,
    connection: SqlConnection,
    batch: BatchContext,
  ): Promise<void> {
    const served = await this.access.handoffs.serve(ops, now, batch);
    await wakeOnCommit(this.access, connection, batch, this.name, this.servedBy(ops, served));
  }

  /**
   * What a wake-up after a serve says (see wakeLocallyOnCommit), read as the transaction commits:
   * the queue's next event as its row holds it then, and the receivers that began to wait unseen
   * by the serve (`served`: its mark), and the sessions ended, whose receives learn so by
   * looking (R16); undefined, every receiver looking, when the serve left one to look on its own.
   */
  private servedBy(ops: QueueOps, served: number | undefined): (() => ServedWake) | undefined {
    if (served === undefined) return undefined;
    const { handoffs } = this.access;
    const ended = ops.endedSessions();
    return () => ({
      nextEventAt: ops.q.nextEventAt,
      unseen: handoffs.unseenSince(this.name, served),
      ...(ended.length === 0 ? {} : { sessionsEnded: ended }),
    });
  }

  /**
   * Room freed under the queue's prefetch or a session's (an ack, a nack, a session closed) may
   * let receivers of this process take jobs that were ready: they are served in this
   * transaction, and once it commits only those whose look was under way look again. Woken
   * instead, every receiver in a session of its own would look at every ack.
   */
  private async serveReceiversHere(ops: QueueOps, now: number, batch: BatchContext) {
    const served = await this.access.handoffs.serve(ops, now, batch);
    wakeLocallyOnCommit(this.access, batch, this.name, this.servedBy(ops, served));
  }

  private async ops(connection: SqlConnection, batch: BatchContext): Promise<QueueOps> {
    const ops = await queueOps(this.access, connection, batch, this.name);
    if (this.pinned) {
      // The first call pins the queue it finds; a transaction that rolls back found it too.
      this.making ??= ops.q.incarnation;
      if (ops.q.incarnation !== this.making) throw pinnedQueueGone(this.name);
    }
    return ops;
  }
}

type SteppedOperation = RedriveOperation | PurgeOperation | MoveJobsOperation;

function takesSteps(operation: Operation): operation is SteppedOperation {
  return (
    operation.type === 'redrive' || operation.type === 'purge' || operation.type === 'moveJobs'
  );
}

/** One step of a stepped operation: how many jobs it took, and whether it was the last. */
type Step = (
  ops: QueueOps,
  now: number,
  batch: BatchContext,
) => Promise<{ count: number; done: boolean }>;

/**
 * The steps of `operation`. What a step leaves for the next is kept only once its transaction
 * committed: a transaction rolled back may run again.
 */
function stepsOf(operation: SteppedOperation): Step {
  if (operation.type === 'moveJobs') {
    const run = new MoveRun(operation);
    return async (ops, now, batch) => {
      batch.afterRollback(run.begin());
      const count = await ops.moveJobs(now, operation, run);
      return { count, done: run.done };
    };
  }
  const act = (ops: QueueOps, now: number, ids?: readonly string[], page?: DeadPage) =>
    operation.type === 'redrive' ? ops.redrive(now, ids, page) : ops.purge(now, ids, page);
  if (operation.ids === undefined) {
    // The front of the dead set, page after page, of the jobs dead when the first was taken.
    let through: number | undefined;
    return async (ops, now, batch) => {
      const page: DeadPage = { through, limit: BULK_STEP };
      const count = await act(ops, now, undefined, page);
      batch.afterCommit(() => {
        through = page.through;
      });
      // A whole page may have been the last: no step more (another R3 at `now`) finds so.
      return { count, done: count < BULK_STEP || !(await ops.deadLeft(page)) };
    };
  }
  // Each id once, in the order named (a job redriven, then dead again, is not redriven twice),
  // the repeats passed over step by step: a set of all the ids made before the first step held
  // the event loop for 1–2 s for 1,000,000 of them.
  const ids = operation.ids;
  const named = new Set<string>();
  let next = 0;
  return async (ops, now, batch) => {
    const part: string[] = [];
    let at = next;
    for (; at < ids.length && part.length < BULK_STEP; at += 1) {
      const id = ids[at] as string;
      if (named.has(id)) continue;
      named.add(id);
      part.push(id);
    }
    // Repeats that end the list end the call with this step.
    while (at < ids.length && named.has(ids[at] as string)) at += 1;
    batch.afterRollback(() => {
      for (const id of part) named.delete(id);
    });
    const count = await act(ops, now, part);
    batch.afterCommit(() => {
      next = at;
    });
    return { count, done: at >= ids.length };
  };
}

/**
 * The answer of a merged call as the outcomes of its parts, `sizes[i]` values each; a typed
 * refusal is every part's outcome, not a throw. A bad clock (R2) and a queue that does not
 * exist refuse the whole batch, as they do any other batch.
 */
async function spread(answer: Promise<unknown[]>, sizes: readonly number[]): Promise<Outcome[]> {
  try {
    return inParts(await answer, sizes).map((value) => ({ ok: true, value }) as Outcome);
  } catch (error) {
    if (
      error instanceof ClockError ||
      error instanceof NotFoundError ||
      !(error instanceof LeaseqError)
    ) {
      throw error;
    }
    return sizes.map(() => ({ ok: false, error }));
  }
}

/** The operations when they are all reserves with the same options; else undefined. */
function sameReserves(operations: readonly Operation[]): ReserveOperation[] | undefined {
  const first = operations[0];
  if (first?.type !== 'reserve') return undefined;
  // Auto-acked ones take their jobs one after the other: a group head taken by one lets its
  // next member go on for the reserve after it (R22, R24), which one reserve of them all, taking
  // ready as it found it, would not hand out.
  if (first.ack === 'auto' && operations.length > 1) return undefined;
  const same = (operation: Operation): operation is ReserveOperation =>
    operation.type === 'reserve' &&
    operation.visibility === first.visibility &&
    operation.session === first.session &&
    operation.ack === first.ack;
  return operations.every(same) ? (operations as ReserveOperation[]) : undefined;
}

/**
 * A merged reserve's answer to one of its calls. `next`: the reserve took nothing and learnt
 * the queue's next event with it (a time at or before the exact one; undefined: none).
 */
interface Reserved {
  deliveries: Delivery[];
  next?: { at: number | undefined };
}

/**
 * One call's part of a merged reserve: its time, how many jobs it takes at most, and whether it
 * would go on to wait if it took none (and so wants the queue's next event).
 */
interface ReserveArg {
  now: number;
  max: number;
  withNextEvent: boolean;
}

/**
 * Runs a batch's operations one after the other in its transaction: each answered by its value
 * or its typed refusal (which has changed nothing). A bad clock refuses the whole batch (R2),
 * and any other error rolls it back: both are thrown.
 */
async function runEach(
  ops: QueueOps,
  now: number,
  operations: readonly Operation[],
  prepared: readonly Prepared[],
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const [index, operation] of operations.entries()) {
    try {
      outcomes.push({
        ok: true,
        value: await runOperation(ops, now, operation, prepared[index]),
      });
    } catch (error) {
      if (error instanceof ClockError || !(error instanceof LeaseqError)) throw error;
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
}

/** One call's part of a merged publish: its time, its publishes and what was made of them. */
interface PublishArg {
  now: number;
  operations: readonly PublishOperation[];
  prepared: readonly Prepared[];
}

/**
 * The outcomes of merged publishes as one publish of all their jobs at `at`, or undefined,
 * having written nothing, where each must run on its own (see SqlQueue.publishMerged).
 */
async function publishedTogether(
  ops: QueueOps,
  at: number,
  args: readonly PublishArg[],
): Promise<Outcome[][] | undefined> {
  if (ops.q.options.maxLength !== undefined) return undefined;
  const jobs: EncodedPublish[] = [];
  const sizes: number[] = [];
  for (const arg of args) {
    for (const prepared of arg.prepared) {
      if (prepared === undefined || 'error' in prepared) return undefined;
      for (const job of prepared.jobs) jobs.push(job);
      sizes.push(prepared.jobs.length);
    }
  }
  ops.checkClock(at);
  let results: PublishResult[];
  try {
    results = await ops.publish(at, jobs);
  } catch (error) {
    // A refusal has written nothing (a publish checks before it writes); the calls then run
    // one by one, each refused or not on its own.
    if (error instanceof ClockError || !(error instanceof LeaseqError)) throw error;
    return undefined;
  }
  const perPublish = inParts(results, sizes).map((value) => ({ ok: true, value }) as Outcome);
  return inParts(
    perPublish,
    args.map((arg) => arg.operations.length),
  );
}

/** One call's part of a merged ack: its time and its tokens. */
interface AckArg {
  now: number;
  /** The tokens of each ack of the call. */
  lists: readonly (readonly number[])[];
}

/** The time a merged call runs at: the latest of its calls' (all equal on a strict queue). */
function latest(args: readonly { now: number }[]): number {
  // The first call's own value, not a number made of it: a `now` that is no time is refused.
  let at = (args[0] as { now: number }).now;
  for (const arg of args) if (arg.now > at) at = arg.now;
  return at;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, each) => total + each, 0);
}

/** A merged call's answer cut into its calls' answers, `sizes[i]` values each, in order. */
function inParts<T>(values: readonly T[], sizes: readonly number[]): T[][] {
  let at = 0;
  return sizes.map((size) => {
    const part = values.slice(at, at + size);
    at += size;
    return part;
  });
}
