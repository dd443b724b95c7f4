import {
  build,
  ClosedError,
  ConflictError,
  checkedOperations,
  checkQueueName,
  type DeadLetterPageOptions,
  type Delivery,
  type DeliveryPageOptions,
  type InspectOptions,
  type MoveJobsOptions,
  type NackOptions,
  type Operation,
  type Outcome,
  type PublishInput,
  type PublishResult,
  type QueueOptions,
  type QueueStats,
  type ReserveOperation,
  type ResolvedQueueOptions,
  type ResultOf,
  type SessionOptions,
  UnsupportedError,
  ValidationError,
} from '../core/index.js';
import { Problems } from '../core/validate.js';
import type {
  CancelListener,
  Engine,
  EngineTransaction,
  QueueHandle,
  SqlParameter,
  StorageCloseOptions,
} from '../engine/engine.js';
import type { ScheduleStore } from '../engine/schedules.js';
import { statsOfMany } from '../engine/stats-by-step.js';
import { type Clock, SystemClock } from './clock.js';
import { noteLeaseAge } from './lease-age.js';
import { onAbort } from './on-abort.js';
import {
  type Broker,
  type BrokerTransaction,
  checkCloseOptions,
  checkReceiveOnly,
  type Queue,
  RECEIVE_ONLY_OPTIONS,
  type ReceiveOptions,
} from './queue.js';
import {
  checkScheduleName,
  type ScheduleOptions,
  type ScheduleWhen,
  scheduleRecord,
  scheduleView,
} from './schedule-times.js';
import { Scheduler, type SchedulerOptions } from './scheduler.js';
import { takePlace, WakeSignal } from './wake-signal.js';

/**
 * The reason the broker's own waits are ended with (a look's park, a sleep cut short), made
 * once: `abort()` without one makes an AbortError with its stack trace each time, and a look
 * ends such a wait or two, many times a second per waiting receive.
 */
const WAIT_ENDED = new DOMException('the wait ended', 'AbortError');

/** Options of an EngineBroker. */
export interface BrokerOptions {
  /** Where `now` comes from. Default: the system clock, monotonic. */
  clock?: Clock;
}

/** The in-process Broker: supplies `now` to an engine and waits for work on receivers' behalf. */
export class EngineBroker implements Broker {
  /** Supplies `now` (ms) to the engine's calls and times the waits. Default: the system clock. */
  readonly clock: Clock;
  private readonly wakes: WakeSignal;
  private readonly closing = new AbortController();
  private readonly stopListening: () => void;

  constructor(
    /** The storage the queues live in. */
    readonly engine: Engine,
    options: BrokerOptions = {},
  ) {
    this.clock = options.clock ?? new SystemClock();
    this.wakes = new WakeSignal(engine.watchWakes?.bind(engine));
    this.stopListening = engine.onWake((queue, served) =>
      served === undefined
        ? this.wakes.wake(queue)
        : this.wakes.wakeServed(queue, served.nextEventAt, served.unseen, served.sessionsEnded),
    );
  }

  get durable(): boolean {
    return this.engine.capabilities.durable;
  }

  async queue<P = unknown>(name: string, options?: QueueOptions): Promise<Queue<P>> {
    this.checkOpen();
    return this.wrap<P>(await this.engine.queue(name, options));
  }

  async ensureQueue<P = unknown>(
    name: string,
    options?: QueueOptions,
  ): Promise<{
    /** The queue. */
    queue: Queue<P>;
    /** true when this call created it. */
    created: boolean;
  }> {
    this.checkOpen();
    const { handle, created } = await this.engine.ensureQueue(name, options);
    return { queue: this.wrap<P>(handle), created };
  }

  handle<P = unknown>(name: string): Queue<P> {
    this.checkOpen();
    return this.wrap<P>(this.engine.handle(name));
  }

  pinnedHandle<P = unknown>(name: string): Queue<P> {
    this.checkOpen();
    return this.wrap<P>(this.engine.pinnedHandle?.(name) ?? this.engine.handle(name));
  }

  /** The handle with the broker's clock; `P` is the caller's claim, never checked (see Queue). */
  private wrap<P>(handle: QueueHandle): Queue<P> {
    return new EngineQueue(
      handle,
      this.clock,
      this.wakes,
      this.closing.signal,
      this.engine,
      this.engine.onCancel?.bind(this.engine),
    ) as Queue as Queue<P>;
  }

  /**
   * A scheduler over this broker's storage (R25): `runOnce()` publishes the due occurrences of
   * every stored schedule; `start()` keeps doing so until `stop()` or this broker's close.
   * Several may run over one storage.
   */
  scheduler(options?: SchedulerOptions): Scheduler {
    return new Scheduler(
      this.engine,
      this.clock,
      // Not `queue`: a queue deleted during a pass is not made again by its occurrence.
      (queue, input) => this.handle(queue).publish(input),
      options,
      // Its loop ends with the broker's close (see Scheduler.start).
      this.closing.signal,
    );
  }

  async updateQueue(name: string, options: QueueOptions): Promise<ResolvedQueueOptions> {
    this.checkOpen();
    return this.engine.updateQueue(name, options);
  }

  async listQueues() {
    this.checkOpen();
    return this.engine.listQueues();
  }

  async checkStorage(): Promise<void> {
    this.checkOpen();
    await this.engine.checkStorage();
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.checkOpen();
    const deleted = await this.engine.deleteQueue(name);
    // Receivers waiting on it look again now and learn it is gone (NOT_FOUND), rather than at
    // the end of their wait.
    if (deleted) this.wakes.wakeAll(name);
    return deleted;
  }

  async statsOfQueues(names: readonly string[]): Promise<Map<string, QueueStats>> {
    this.checkOpen();
    if (!Array.isArray(names)) {
      throw new ValidationError(`statsOfQueues takes an array of queue names, got ${typeof names}`);
    }
    for (const name of names) checkQueueName(name);
    // Each read and step at the clock's reading as it is made, as every call of the broker:
    // calls of the queues made while this read awaits run at a later time, and a step at a time
    // read before them would be refused (R2) by an engine that applies times strictly.
    const now = () => this.clock.now();
    if (this.engine.statsOfQueues !== undefined) return this.engine.statsOfQueues(now, names);
    const deadLetterQueues = new Map<string, string>();
    for (const { name, options } of await this.engine.listQueues()) {
      if (options.deadLetterQueue !== undefined)
        deadLetterQueues.set(name, options.deadLetterQueue);
    }
    // Every queue takes its step: none is read as it stands.
    return statsOfMany(
      (name) => this.engine.handle(name),
      now,
      names,
      async (some) => ({
        stats: new Map(),
        due: some,
        deadLetterQueues,
      }),
    );
  }

  async transaction<T>(work: (tx: BrokerTransaction) => Promise<T>): Promise<T> {
    this.checkOpen();
    if (typeof work !== 'function') {
      throw new ValidationError(
        `transaction takes a function of the transaction, (tx) => …, got ${typeof work}`,
      );
    }
    const engine = this.engine;
    if (engine.transaction === undefined) {
      throw new UnsupportedError(`${engine.target} has no transactions; use a SQL engine`);
    }
    return engine.transaction((tx) => work(new ClockedTransaction(tx, this.clock)));
  }

  async secretValues(name: string): Promise<string[]> {
    this.checkOpen();
    const secret = await this.engine.readSecret(name);
    const previousValid =
      secret.previous !== undefined && this.clock.now() < (secret.previousUntil ?? 0);
    return previousValid ? [secret.current, secret.previous as string] : [secret.current];
  }

  async rotateSecret(name: string, graceMs: number): Promise<void> {
    this.checkOpen();
    if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
      throw new ValidationError(`graceMs must be an integer ≥ 0 (ms), got ${String(graceMs)}`);
    }
    await this.engine.rotateSecret(name, this.clock.now() + graceMs);
  }

  /** Ends waiting receives (empty answers) and closes the engine (see Broker.close). */
  async close(options?: StorageCloseOptions): Promise<void> {
    const { signal } = checkCloseOptions(options);
    if (!this.closing.signal.aborted) {
      this.closing.abort();
      this.wakes.wakeAll();
      this.stopListening();
    }
    // Repeated closes share the engine's, and any one's signal cuts what they all wait for.
    await this.engine.close(signal === undefined ? {} : { signal });
  }

  private checkOpen(): void {
    if (this.closing.signal.aborted) throw new ClosedError('broker is closed');
  }
}

/**
 * Runs an engine call at the clock's now. Processes agree on time one way: an engine on
 * shared storage, opened by `open`, follows the queue's time (EngineOptions.clockMode
 * 'follow'), so a `now` behind what another process committed is raised to it, never refused;
 * and a broker over storage with its own clock (PostgreSQL) sets its clock by it at open.
 */
function atNow<T>(clock: Clock, call: (now: number) => Promise<T>): Promise<T> {
  return call(clock.now());
}

/** An engine transaction with the broker's clock. */
class ClockedTransaction implements BrokerTransaction {
  constructor(
    private readonly tx: EngineTransaction,
    private readonly clock: Clock,
  ) {}

  query<Row extends object>(sql: string, params?: readonly SqlParameter[]) {
    return this.tx.query<Row>(sql, params);
  }

  run(sql: string, params?: readonly SqlParameter[]) {
    return this.tx.run(sql, params);
  }

  ack(queue: string, token: number) {
    return atNow(this.clock, (now) => this.tx.ack(queue, now, token));
  }

  nack(queue: string, token: number, options?: NackOptions) {
    return atNow(this.clock, (now) => this.tx.nack(queue, now, token, options));
  }

  publish(queue: string, input?: PublishInput) {
    return atNow(this.clock, (now) => this.tx.publish(queue, now, input));
  }

  claimOnce(consumer: string, jobId: string) {
    return this.tx.claimOnce(consumer, jobId, this.clock.now());
  }

  pruneInbox(consumer: string, maxAgeMs: number) {
    // Both arguments named at once, in the words of every other check (a string "5" is shown
    // as one); the engine checks the consumer again, with the time it is given.
    const problems = new Problems();
    problems.id('consumer', consumer);
    problems.nonNegativeInteger('maxAgeMs', maxAgeMs);
    if (problems.list.length > 0) return Promise.reject(new ValidationError(problems.list));
    return this.tx.pruneInbox(consumer, Math.max(0, this.clock.now() - maxAgeMs));
  }
}

/** A queue handle with the broker's clock; waits for work in `receive`. */
export class EngineQueue implements Queue {
  constructor(
    private readonly handle: QueueHandle,
    private readonly clock: Clock,
    private readonly wakes: WakeSignal,
    private readonly closing: AbortSignal,
    private readonly scheduleStore: ScheduleStore,
    /** The engine's news of cancelled deliveries (R28), where it has any. */
    private readonly onCancel?: (listener: CancelListener) => () => void,
  ) {}

  get name(): string {
    return this.handle.name;
  }

  /** true once this broker was closed (Queue.closed). */
  get closed(): boolean {
    return this.closing.aborted;
  }

  async schedule(name: string, when: ScheduleWhen, options?: ScheduleOptions) {
    const now = this.clock.now();
    await this.scheduleStore.putSchedule(scheduleRecord(this.name, name, when, options, now));
    // That schedule only: a queue may have many, and one set reads none of the others.
    const stored = (await this.scheduleStore.listSchedules(this.name, name)).find(
      (schedule) => schedule.name === name,
    );
    // Removed (or its queue deleted) by another caller between the write and this read.
    if (stored === undefined) {
      throw new ConflictError(
        `schedule ${name} of queue ${this.name} was removed by another caller as it was set; set it again`,
      );
    }
    return scheduleView(stored, now);
  }

  async schedules() {
    // NOT_FOUND for a queue that is gone, as every other call of the handle answers.
    await this.handle.options();
    const now = this.clock.now();
    const stored = await this.scheduleStore.listSchedules(this.name);
    return stored.map((schedule) => scheduleView(schedule, now));
  }

  async removeSchedule(name: string) {
    checkScheduleName(name);
    await this.handle.options();
    return this.scheduleStore.removeSchedule(this.name, name);
  }

  options() {
    return this.handle.options();
  }

  /**
   * Executes parsed operations in order at one now, as one unit of the engine (see
   * QueueHandle.execute); each is answered on its own.
   */
  async execute(operations: readonly Operation[]): Promise<Outcome[]> {
    const checked = checkedOperations(operations);
    if (!checked.some((entry) => entry instanceof ValidationError)) {
      return atNow(this.clock, (now) => this.handle.execute(now, checked as Operation[]));
    }
    // The refused entries answer alone; the others run as one unit, as they would have.
    const valid = checked.filter(
      (entry): entry is Operation => !(entry instanceof ValidationError),
    );
    const ran =
      valid.length === 0 ? [] : await atNow(this.clock, (now) => this.handle.execute(now, valid));
    let next = 0;
    return checked.map(
      (entry): Outcome =>
        entry instanceof ValidationError ? { ok: false, error: entry } : (ran[next++] as Outcome),
    );
  }

  // publish, publishBatch, receive without a wait and ack are the calls of every job: each is
  // the handle's own call, without async layers of its own (a refusal still rejects).

  publish(input?: PublishInput): Promise<PublishResult> {
    return this.handle.publish(this.clock.now(), input === undefined ? {} : input);
  }

  publishBatch(inputs: readonly PublishInput[]): Promise<PublishResult[]> {
    return this.handle.publishBatch(this.clock.now(), inputs);
  }

  receive(options: ReceiveOptions = {}): Promise<Delivery[]> {
    // One reserve; the reserve builder reads only its own fields of the options.
    if (typeof options === 'object' && options !== null && !Array.isArray(options)) {
      if ((options.wait === undefined || options.wait === 0) && options.signal === undefined) {
        const at = this.clock.now();
        return this.aged(at, this.handle.reserve(at, options, RECEIVE_ONLY_OPTIONS));
      }
    }
    return this.receiveWaiting(options);
  }

  /** `receive` with a wait: jobs ready now are taken at once, else it parks on wake-ups. */
  private async receiveWaiting(options: ReceiveOptions): Promise<Delivery[]> {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      // The reserve builder's own words for options that are not an object.
      build.reserve(options, RECEIVE_ONLY_OPTIONS);
    }
    const { wait = 0, signal, ...reserve } = options;
    checkReceiveOnly(wait, signal);
    const operation = build.reserve(reserve);
    // Jobs ready now are taken without the cost of parking on a wake-up.
    const ready = await this.reserveNow(operation);
    // Closed meanwhile, it ends with no jobs (see Broker.close), without a look the storage,
    // closed, refuses.
    if (wait === 0 || ready.length > 0 || signal?.aborted || this.closing.aborted) return ready;
    const until = this.clock.now() + wait;
    // Receivers that can take the same jobs share a lane (see WakeSignal): one of them looks
    // at a wake-up, and passes it on when it may have left jobs for the next. What a receive
    // may take depends on its session (its prefetch) and its ack mode (at most once, no
    // prefetch bound applies: R22).
    const lane = `${operation.ack}:${operation.session ?? ''}`;
    // First come, first served: its place in line, kept for the whole wait (see takePlace).
    const place = takePlace();
    let lastParked: { wokenInLook: boolean } | undefined;
    let answer: Delivery[] | undefined;
    try {
      for (let first = true; ; first = false) {
        // Woken by the caller's signal or by closing: answer empty, touch nothing more.
        if (!first && (signal?.aborted || this.closing.aborted)) return [];
        const parked = this.parkOnWake(signal, lane, place, operation.session);
        lastParked = parked;
        let handedOver: Promise<Delivery[]> | undefined;
        let failure: { error: unknown } | undefined;
        try {
          let nextEvent: number | undefined;
          if (this.handle.reserveOnReady !== undefined) {
            // The engine reserves for us now or, once we wait, in the publish that makes a job
            // ready, committed with it.
            const waiting = this.handle.reserveOnReady(
              this.clock.now(),
              operation,
              parked.stop,
              place,
            );
            handedOver = waiting.deliveries;
            parked.inPlaceBefore = waiting.inPlaceBefore === true;
            parked.looking = true;
            try {
              nextEvent = await waiting.armed;
            } catch (error) {
              // Thrown once what a publish may have handed over meanwhile is ours (below).
              failure = { error };
            }
            parked.looking = false;
          } else {
            parked.looking = true;
            const deliveries = await this.reserveNow(operation);
            parked.looking = false;
            if (deliveries.length > 0 || this.clock.now() >= until) {
              answer = deliveries;
              return deliveries;
            }
            if (signal?.aborted || this.closing.aborted) return [];
            nextEvent = await this.handle.nextEventAt();
          }
          const now = this.clock.now();
          // Or earlier, if a served wake-up during its look said so (see parkOnWake).
          parked.sleepsUntil = Math.min(
            until,
            nextEvent ?? Number.POSITIVE_INFINITY,
            parked.sleepsUntil,
          );
          const sleepMs = parked.sleepsUntil - now;
          // A lease or delay already due: the next reserve handles it (R3), no need to sleep.
          if (failure === undefined && sleepMs > 0 && !signal?.aborted && !this.closing.aborted) {
            await Promise.race([
              parked.woken,
              this.sleepWhileParked(parked),
              ...(handedOver === undefined ? [] : [handedOver]),
            ]);
          }
        } finally {
          parked.release();
        }
        // Released: a job reserved for us meanwhile is ours (it comes with its commit).
        const handedJobs = handedOver === undefined ? [] : await handedOver;
        if (handedJobs.length > 0) {
          answer = this.agedSinceReserved(operation, handedJobs);
          return answer;
        }
        if (failure !== undefined) {
          // A look the broker's close cut short (the storage refuses what comes after it: on
          // PostgreSQL, the read of the next event after the reserve): a waiting receive ends
          // with no jobs, as Broker.close says, not with the storage's ClosedError.
          if (this.closing.aborted) return [];
          throw failure.error;
        }
        if (this.clock.now() >= until) {
          // One last look: a job due at the very end, or published where no wake-up reached
          // us (another process's, its notification lost with the listening connection).
          if (signal?.aborted || this.closing.aborted) return [];
          answer = await this.reserveNow(operation);
          return answer;
        }
      }
    } finally {
      // Leaving without jobs (its wait over, aborted, failed) or with all it asked for, this
      // receiver may leave a wake-up or jobs unlooked at: the next of its lane looks. One that
      // took fewer than it asked for found the queue dry for its lane (jobs handed over count
      // too: on PostgreSQL the receiver's own statement, woken by another process's publish,
      // takes them, and serves no other receiver), unless a wake-up reached it during its last
      // look (its own take let a group go on, R24): first of its lane, as it keeps its place,
      // it had that wake-up in place of the next one, which looks now.
      const dry = answer !== undefined && answer.length > 0 && answer.length < operation.max;
      if (!dry || lastParked?.wokenInLook === true) this.wakes.relay(this.name, lane);
    }
  }

  ack(token: number): Promise<boolean> {
    return this.handle.ack(this.clock.now(), token);
  }

  async ackMany(tokens: readonly number[]) {
    return this.run(build.ackMany(tokens));
  }

  async nack(token: number, options?: NackOptions) {
    return this.run(build.nack(token, options));
  }

  reject(token: number, options?: NackOptions) {
    return this.nack(token, options);
  }

  async extend(token: number, visibility: number) {
    return this.run(build.extend(token, visibility));
  }

  async openSession(options?: SessionOptions) {
    return this.run(build.openSession(options));
  }

  async heartbeat(sessionId: string): Promise<void> {
    await this.run(build.heartbeat(sessionId));
  }

  async closeSession(sessionId: string) {
    return this.run(build.closeSession(sessionId));
  }

  async ackUpTo(sessionId: string, token: number) {
    return this.run(build.ackUpTo(sessionId, token));
  }

  async nackUpTo(sessionId: string, token: number, options?: NackOptions) {
    return this.run(build.nackUpTo(sessionId, token, options));
  }

  deadLetters() {
    return this.handle.deadLetters();
  }

  deadLetterPage(options?: DeadLetterPageOptions) {
    return this.handle.deadLetterPage(options);
  }

  async redrive(ids?: readonly string[]) {
    return this.run(build.redrive(ids));
  }

  async purge(ids?: readonly string[]) {
    return this.run(build.purge(ids));
  }

  async purgeQueue(options?: {
    /** true: the dead jobs are removed too. Default false. */
    dead?: boolean;
  }) {
    return this.run(build.purgeQueue(options));
  }

  async moveJobs(options?: MoveJobsOptions) {
    return this.run(build.moveJobs(options));
  }

  async cancel(
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ) {
    return this.run(build.cancel(id, options));
  }

  watchCancels(listener: (token: number) => void): () => void {
    const name = this.name;
    return (
      this.onCancel?.((queue, token) => {
        if (queue === name) listener(token);
      }) ?? (() => {})
    );
  }

  watchWakes(listener: () => void): () => void {
    if (this.closing.aborted) return () => {};
    return this.wakes.listen(this.name, listener);
  }

  watchClose(listener: (cause: Error) => void): () => void {
    if (this.closing.aborted) return () => {};
    return onAbort(this.closing, () => listener(new ClosedError('broker is closed')));
  }

  async stats() {
    return this.run(build.stats());
  }

  inspect(options?: InspectOptions) {
    return this.handle.inspect(options);
  }

  deliveries() {
    return this.handle.deliveries();
  }

  deliveryPage(options?: DeliveryPageOptions) {
    return this.handle.deliveryPage(options);
  }

  job(id: string) {
    return this.handle.job(id);
  }

  /** One operation at the clock's now (see atNow); its error, if any, is thrown. */
  private run<O extends Operation>(operation: O): Promise<ResultOf<O>> {
    return atNow(this.clock, (now) => this.handle.run(now, operation));
  }

  private reserveNow(operation: ReserveOperation): Promise<Delivery[]> {
    const at = this.clock.now();
    return this.aged(at, this.handle.run(at, operation));
  }

  /**
   * Deliveries reserved by another transaction (a publish that handed them over, a statement
   * that reserved as it parked): reserved at their deadline less the lease asked for, on the
   * storage's clock, which this broker's follows. Noted with how long their leases had run, as
   * `aged` notes it (a capped lease counts as ending at its deadline, as it does).
   */
  private agedSinceReserved(operation: ReserveOperation, deliveries: Delivery[]): Delivery[] {
    const visibility = operation.visibility;
    if (visibility === undefined || operation.ack === 'auto') return deliveries;
    const now = this.clock.now();
    for (const delivery of deliveries) {
      noteLeaseAge(delivery, now - (delivery.deadline - visibility));
    }
    return deliveries;
  }

  /**
   * Deliveries reserved at `at`, noted with how long their leases had run by the answer: a
   * storage that answers late (a stalled connection, a long lock wait) leaves a worker less
   * of the lease than it asked for, and it counts its lease from the reservation.
   */
  private async aged(at: number, reserving: Promise<Delivery[]>): Promise<Delivery[]> {
    const deliveries = await reserving;
    const age = this.clock.now() - at;
    if (age > 0) for (const delivery of deliveries) noteLeaseAge(delivery, age);
    return deliveries;
  }

  /**
   * Listens for wake-ups of this queue from now on, so a publish that lands between an empty
   * reserve and the wait is not missed. `stop` ends the wait (caller's signal, broker closing).
   */
  private parkOnWake(
    signal: AbortSignal | undefined,
    lane: string,
    place: number,
    session: string | undefined,
  ) {
    const stop = new AbortController();
    const abort = () => stop.abort(WAIT_ENDED);
    if (signal?.aborted || this.closing.aborted) abort();
    const unwatchCaller = signal === undefined ? undefined : onAbort(signal, abort);
    const unwatchClose = onAbort(this.closing, abort);
    const parked = {
      woken: Promise.resolve(),
      /** Its look is under way (set by the caller). */
      looking: false,
      /** It waits among the engine's receivers from before its look (set by the caller). */
      inPlaceBefore: false,
      /** A wake-up reached it while its look was under way. */
      wokenInLook: false,
      /** Once its look is over: when it looks again if nothing wakes it (the queue's time). */
      sleepsUntil: Number.POSITIVE_INFINITY,
      /** Its sleep under way (see sleepWhileParked). */
      sleeping: undefined as AbortController | undefined,
      stop: stop.signal,
      release: () => {
        stop.abort(WAIT_ENDED);
        unwatchCaller?.();
        unwatchClose();
      },
    };
    parked.woken = this.wakes.next(
      this.name,
      lane,
      stop.signal,
      place,
      () => {
        if (parked.looking) parked.wokenInLook = true;
      },
      // In a session (a lane of its own), a served wake-up makes it look only if its look was
      // under way and may have missed what the serve left (it was not yet in place); otherwise
      // it sleeps no later than the queue's next event, as its look would have learnt: a job
      // handed out meanwhile may come back when its lease runs out (R3).
      session !== undefined
        ? (nextEventAt) => {
            if (parked.looking && !parked.inPlaceBefore) return true;
            if (nextEventAt < parked.sleepsUntil) {
              parked.sleepsUntil = nextEventAt;
              parked.sleeping?.abort(WAIT_ENDED);
            }
            return false;
          }
        : undefined,
      // A served wake-up that ended its session makes it look, to learn so (R16).
      session,
    );
    return parked;
  }

  /**
   * Sleeps until `parked.sleepsUntil` of the clock, or until it is stopped; a served wake-up
   * that brings that time forward meanwhile (see parkOnWake) cuts the sleep short to the new
   * time.
   */
  private async sleepWhileParked(parked: {
    sleepsUntil: number;
    sleeping: AbortController | undefined;
    stop: AbortSignal;
  }): Promise<void> {
    for (;;) {
      const ms = parked.sleepsUntil - this.clock.now();
      if (ms <= 0 || parked.stop.aborted) return;
      const sleeping = new AbortController();
      parked.sleeping = sleeping;
      const unwatch = onAbort(parked.stop, () => sleeping.abort(WAIT_ENDED));
      await this.clock.sleep(ms, sleeping.signal);
      unwatch();
      parked.sleeping = undefined;
      if (!sleeping.signal.aborted) return;
    }
  }
}
