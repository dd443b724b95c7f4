import {
  byCodeUnits,
  ClockError,
  ClosedError,
  checkDeadLetterChainNow,
  checkQueueName,
  checkSameOptions,
  type DeadLetterPageOptions,
  type Delivery,
  type DeliveryPageOptions,
  type InspectOptions,
  type JobTransfer,
  JSON_PAYLOADS,
  LeaseQueue,
  LeaseqError,
  makesJobsReady,
  NotFoundError,
  type Operation,
  type OperationResults,
  type OperationType,
  type Outcome,
  type QueueLinks,
  type QueueOptions,
  type ReserveOperation,
  type ResolvedQueueOptions,
  reschedulesReceivers,
} from '../../core/index.js';
import { resolveQueueOptions, updatedQueueOptions } from '../../core/validate.js';
import type {
  CancelListener,
  Engine,
  EngineCapabilities,
  QueueHandle,
  QueueInfo,
  ServedWake,
  WakeListener,
} from '../engine.js';
import { OperationHandle } from '../operation-handle.js';
import { pinnedQueueGone } from '../pinned.js';
import type { ScheduleRecord } from '../schedules.js';
import { checkSecretName, newSecretValue, type StoredSecret } from '../secrets.js';
import { WakeHub } from '../wake-hub.js';
import { MemoryHandoffs, type Served } from './memory-handoffs.js';
import { MemorySchedules } from './memory-schedules.js';

/**
 * The reference engine: each queue is a pure `LeaseQueue` in this process's memory.
 * Nothing survives the process.
 */
export class MemoryEngine implements Engine, QueueLinks {
  readonly target = 'memory:';
  readonly capabilities: EngineCapabilities = {
    durable: false,
    shared: false,
    transactions: false,
    crossProcessWakeups: false,
  };
  private readonly queues = new Map<string, LeaseQueue>();
  /** Counters of deleted queues, continued when the name is used again (R6). */
  private readonly floors = new Map<string, { nextToken: number; nextSession: number }>();
  private readonly wakes = new WakeHub();
  /** Receives waiting for jobs, handed them in the step that makes them ready. */
  private readonly handoffs = new MemoryHandoffs();
  /** Kept in this process's memory only, like everything else here. */
  private readonly secrets = new Map<string, StoredSecret>();
  private readonly schedules = new MemorySchedules();
  private closed = false;

  async queue(name: string, options?: QueueOptions): Promise<QueueHandle> {
    return (await this.ensureQueue(name, options)).handle;
  }

  async ensureQueue(
    name: string,
    options?: QueueOptions,
  ): Promise<{
    /** The queue. */
    handle: QueueHandle;
    /** true when this call created it. */
    created: boolean;
  }> {
    this.checkOpen();
    checkQueueName(name);
    // Bad options are refused as such, whether or not the queue exists (not as a conflict).
    resolveQueueOptions(options);
    let core = this.queues.get(name);
    if (core === undefined) {
      // The core keeps payloads as JSON text, as the SQL engines do: the queue holds a copy its
      // publisher cannot change afterwards, and each consumer gets its own.
      core = new LeaseQueue(options, JSON_PAYLOADS);
      this.checkChain(name, core.options.deadLetterQueue);
      const floor = this.floors.get(name);
      if (floor !== undefined) core.continueCounters(floor);
      core.connect(name, this);
      this.queues.set(name, core);
      return { handle: this.handle(name), created: true };
    }
    checkSameOptions(name, core.options, options);
    return { handle: this.handle(name), created: false };
  }

  handle(name: string): QueueHandle {
    this.checkOpen();
    checkQueueName(name);
    // By name, as the SQL engines' handles: after deleteQueue a call fails NOT_FOUND, and a
    // queue made again under the name is the one the handle reaches.
    return new MemoryQueue(name, this.wakes, this.handoffs, () => {
      this.checkOpen();
      // The name was checked above: per call a lookup, not the check again.
      return this.found(name);
    });
  }

  pinnedHandle(name: string): QueueHandle {
    this.checkOpen();
    checkQueueName(name);
    let pinned: LeaseQueue | undefined;
    return new MemoryQueue(name, this.wakes, this.handoffs, () => {
      this.checkOpen();
      const core = this.found(name);
      pinned ??= core;
      if (core !== pinned) throw pinnedQueueGone(name);
      return core;
    });
  }

  async updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    this.checkOpen();
    const core = this.existing(name);
    const next = updatedQueueOptions(core.options, options);
    this.checkChain(name, next.deadLetterQueue);
    const resolved = core.reconfigure(options);
    // A queue resumed (R27) or given more room has jobs to hand out: receivers look again.
    this.wakes.wake(name);
    return resolved;
  }

  /**
   * R26: a job that dies in one queue, or is moved out of it, enters `queue` within the same
   * synchronous step: nothing else runs between leaving one queue and entering the other.
   */
  admit(queue: string, now: number, transfer: JobTransfer): boolean {
    const target = this.queues.get(queue);
    if (target === undefined || !target.admit(now, transfer)) return false;
    queueMicrotask(() => this.wakes.wake(queue));
    return true;
  }

  /** Synchronous: nothing runs between the check and the change of options it guards. */
  private checkChain(name: string, deadLetterQueue: string | undefined): void {
    checkDeadLetterChainNow(
      name,
      deadLetterQueue,
      (queue) => this.queues.get(queue)?.options.deadLetterQueue,
    );
  }

  async listQueues(): Promise<QueueInfo[]> {
    this.checkOpen();
    return [...this.queues.keys()]
      .sort(byCodeUnits)
      .map((name) => ({ name, options: (this.queues.get(name) as LeaseQueue).options }));
  }

  async checkStorage(): Promise<void> {
    this.checkOpen();
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.checkOpen();
    checkQueueName(name);
    const core = this.queues.get(name);
    if (core === undefined) return false;
    this.floors.set(name, core.numbering());
    this.schedules.forgetQueue(name);
    this.queues.delete(name);
    // Its waiting receivers look again and learn it is gone (NOT_FOUND), as on the SQL engines.
    this.wakes.wake(name);
    return true;
  }

  async readSecret(name: string): Promise<StoredSecret> {
    this.checkOpen();
    checkSecretName(name);
    let secret = this.secrets.get(name);
    if (secret === undefined) {
      secret = { current: newSecretValue() };
      this.secrets.set(name, secret);
    }
    return { ...secret };
  }

  async rotateSecret(name: string, previousUntil: number): Promise<StoredSecret> {
    this.checkOpen();
    checkSecretName(name);
    const kept = this.secrets.get(name);
    if (kept === undefined) throw new NotFoundError(`no secret ${name} is kept in this storage`);
    this.secrets.set(name, { current: newSecretValue(), previous: kept.current, previousUntil });
    return this.readSecret(name);
  }

  async putSchedule(schedule: ScheduleRecord): Promise<void> {
    this.checkOpen();
    if (!this.queues.has(schedule.queue)) {
      throw new NotFoundError(`queue ${schedule.queue} does not exist`);
    }
    await this.schedules.putSchedule(schedule);
  }

  async listSchedules(queue?: string, name?: string): Promise<ScheduleRecord[]> {
    this.checkOpen();
    return this.schedules.listSchedules(queue, name);
  }

  async removeSchedule(queue: string, name: string): Promise<boolean> {
    this.checkOpen();
    return this.schedules.removeSchedule(queue, name);
  }

  async advanceSchedule(read: ScheduleRecord, to: number | null): Promise<boolean> {
    this.checkOpen();
    return this.schedules.advanceSchedule(read, to);
  }

  onWake(listener: WakeListener): () => void {
    return this.wakes.add(listener);
  }

  onCancel(listener: CancelListener): () => void {
    return this.wakes.addCancel(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private existing(name: string): LeaseQueue {
    checkQueueName(name);
    return this.found(name);
  }

  private found(name: string): LeaseQueue {
    const core = this.queues.get(name);
    if (core === undefined) throw new NotFoundError(`queue ${name} does not exist`);
    return core;
  }

  private checkOpen(): void {
    if (this.closed) throw new ClosedError(`engine ${this.target} is closed`);
  }
}

/**
 * The core's operations as promises. An operation that may let receivers take jobs (it makes
 * jobs ready or frees room) hands them to the receives waiting on the queue in its own step
 * (see MemoryHandoffs), then wakes them as served (see WakeListener).
 */
class MemoryQueue extends OperationHandle {
  constructor(
    readonly name: string,
    private readonly wakes: WakeHub,
    private readonly handoffs: MemoryHandoffs,
    /** The queue's core as it stands now; throws when the engine closed or the queue is gone. */
    private readonly current: () => LeaseQueue,
  ) {
    super();
  }

  execute(now: number, operations: readonly Operation[]): Promise<Outcome[]> {
    try {
      const core = this.current();
      if (operations.length === 0) return Promise.resolve(core.applyBatch(now, operations));
      const sessionsEnded = core.sessionsEnded;
      const outcomes: Outcome[] = new Array(operations.length);
      let wakes = false;
      for (let i = 0; i < operations.length; i++) {
        const operation = operations[i] as Operation;
        let value: OperationResults[OperationType];
        try {
          value = this.applyOne(core, now, operation);
        } catch (error) {
          // A bad clock refuses the whole batch (R2): the first operation meets it, unchanged.
          if (!(error instanceof LeaseqError) || error instanceof ClockError) throw error;
          outcomes[i] = { ok: false, error };
          continue;
        }
        outcomes[i] = { ok: true, value };
        wakes ||= wakesReceivers(operation, value);
      }
      // A session its step ended (R3: timed out, in a call that failed too) is as a close.
      if (wakes || core.sessionsEnded !== sessionsEnded) {
        this.letReceiversGoOn(core, now, sessionsEnded);
      }
      return Promise.resolve(outcomes);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A batch of one without the batch: the same checks, answer and wake-ups (see execute). */
  protected override executeOne(now: number, operation: Operation): Promise<unknown> {
    try {
      const core = this.current();
      const sessionsEnded = core.sessionsEnded;
      const value = this.applyOneTold(core, now, operation, sessionsEnded);
      if (wakesReceivers(operation, value) || core.sessionsEnded !== sessionsEnded) {
        this.letReceiversGoOn(core, now, sessionsEnded);
      }
      return Promise.resolve(value);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The same for an operation on a list of one: its one answer, without a further promise. */
  protected override executeFirst(now: number, operation: Operation): Promise<unknown> {
    try {
      const core = this.current();
      const sessionsEnded = core.sessionsEnded;
      const value = this.applyOneTold(core, now, operation, sessionsEnded) as readonly unknown[];
      if (wakesReceivers(operation, value) || core.sessionsEnded !== sessionsEnded) {
        this.letReceiversGoOn(core, now, sessionsEnded);
      }
      return Promise.resolve(value[0]);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A receive that waits (see QueueHandle.reserveOnReady): in place among the queue's waiting
   * receives, then served with them from the jobs ready at `now`, all in one step; later, by
   * the operation that makes jobs ready. Nothing runs between its look and its being in place.
   */
  reserveOnReady(now: number, operation: ReserveOperation, signal: AbortSignal, place?: number) {
    let core: LeaseQueue;
    try {
      core = this.current();
    } catch (error) {
      return { deliveries: Promise.resolve([]), armed: Promise.reject(error), inPlaceBefore: true };
    }
    const { entry, deliveries } = this.handoffs.wait(core, operation, signal, place);
    const sessionsEnded = core.sessionsEnded;
    let served: Served;
    try {
      served = this.handoffs.serve(core, now, entry);
    } catch (error) {
      return { deliveries, armed: Promise.reject(error), inPlaceBefore: true };
    }
    // Its look ended sessions (R3, timed out; its own perhaps, which refused it): the receives
    // it had passed over are offered what they released too, and those of the sessions learn of
    // the end (R16). A group's member it took at most once let the next go on (R24), or another
    // receive was refused: the others look, as after a reserve of its own. Woken once its look
    // is under way, so that it passes the wake-up on to the next of its lane if it takes fewer
    // than it asked for.
    if (core.sessionsEnded !== sessionsEnded) {
      const complete = served.complete && this.handoffs.serve(core, now).complete;
      const wake = this.servedWake(core, complete, sessionsEnded);
      queueMicrotask(() => this.wakes.wake(this.name, wake));
    } else if (!served.complete) queueMicrotask(() => this.wakes.wake(this.name));
    if (served.refused !== undefined) {
      return { deliveries, armed: Promise.reject(served.refused), inPlaceBefore: true };
    }
    return { deliveries, armed: Promise.resolve(core.nextEventAt()), inPlaceBefore: true };
  }

  /**
   * After an operation that may let receivers take jobs: the waiting receives are served now,
   * then woken as served (see servedWake).
   */
  private letReceiversGoOn(core: LeaseQueue, now: number, sessionsEnded: number): void {
    const served = this.handoffs.serve(core, now);
    this.wakes.wake(this.name, this.servedWake(core, served.complete, sessionsEnded));
  }

  /**
   * What the wake-up after a serve of every waiting receive says (see WakeListener), the serve
   * `complete` or not (see MemoryHandoffs.serve), `sessionsEnded` having been the queue's count
   * of ended sessions before the operation: the sessions it ended, whose receives look (R16).
   * Undefined, every receiver looking, when one must look itself, or when more sessions ended
   * than the queue keeps the ids of.
   */
  private servedWake(
    core: LeaseQueue,
    complete: boolean,
    sessionsEnded: number,
  ): ServedWake | undefined {
    if (!complete) return undefined;
    const nextEventAt = core.nextEventAt() ?? Number.POSITIVE_INFINITY;
    if (core.sessionsEnded === sessionsEnded) return { nextEventAt, unseen: [] };
    const ended = core.endedSince(sessionsEnded);
    return ended === undefined ? undefined : { nextEventAt, unseen: [], sessionsEnded: ended };
  }

  /**
   * `applyOne`, but a refusal after a step that ended sessions (R3: a heartbeat of a session
   * that timed out, say) wakes the queue's receivers before it is thrown, as a close does.
   */
  private applyOneTold(
    core: LeaseQueue,
    now: number,
    operation: Operation,
    sessionsEnded: number,
  ): OperationResults[OperationType] {
    try {
      return this.applyOne(core, now, operation);
    } catch (error) {
      if (core.sessionsEnded !== sessionsEnded) this.letReceiversGoOn(core, now, sessionsEnded);
      throw error;
    }
  }

  /** One operation's answer; a refusal is thrown. */
  private applyOne(
    core: LeaseQueue,
    now: number,
    operation: Operation,
  ): OperationResults[OperationType] {
    if (operation.type !== 'cancel') return core.apply(now, operation);
    // R28: the delivery a cancel ends, so that its holder hears of it at once.
    const cancelled = core.liveToken(operation.id);
    const value = core.apply(now, operation);
    if (cancelled !== undefined && value === true) {
      queueMicrotask(() => this.wakes.cancelled(this.name, cancelled));
    }
    return value;
  }

  async options() {
    return this.current().options;
  }
  async queueTime() {
    return this.current().queueTime;
  }
  async inspect(options?: InspectOptions) {
    return this.current().inspect(options);
  }
  async deliveries() {
    return this.current().deliveries();
  }
  async deliveryPage(options?: DeliveryPageOptions) {
    return this.current().deliveryPage(options);
  }
  async deadLetters() {
    return this.current().deadLetters();
  }
  async deadLetterPage(options?: DeadLetterPageOptions) {
    return this.current().deadLetterPage(options);
  }
  async job(id: string) {
    return this.current().job(id);
  }
  async nextEventAt() {
    return this.current().nextEventAt();
  }
}

/**
 * Whether receivers parked on this queue should look again after `operation` succeeded with
 * `value`. A group's first member moved out (moveJobs) or handed out at most once (R22) lets
 * the next one go on (R24): ready after the call, for another receiver than the one whose call
 * it was (a receiver that takes fewer than it asked for passes no wake-up on), as on the SQL
 * engines.
 */
function wakesReceivers(operation: Operation, value: unknown): boolean {
  if (makesJobsReady(operation) || reschedulesReceivers(operation)) return true;
  if (operation.type === 'moveJobs') return (value as number) > 0;
  return (
    operation.type === 'reserve' &&
    operation.ack === 'auto' &&
    (value as readonly Delivery[]).some((delivery) => delivery.group !== undefined)
  );
}
