import { copyCounters, newCounters } from './counters.js';
import { SessionClosedError, ValidationError } from './errors.js';
import { IndexedHeap } from './heap.js';
import { ReadyList } from './ready-list.js';
import {
  type AckTimer,
  byAckTimer,
  byAvailability,
  byDeadline,
  byHeartbeatEnd,
  type DeliveryRecord,
  type JobRecord,
  recordAttempt,
  type SessionRecord,
} from './records.js';
import type {
  AttemptOutcome,
  DeadLetter,
  Delivery,
  InspectView,
  JobView,
  LiveDelivery,
  NackOptions,
  PublishInput,
  PublishResult,
  QueueOptions,
  QueueStats,
  ReserveOptions,
  ResolvedQueueOptions,
  SessionOptions,
} from './types.js';
import {
  checkIdList,
  checkNow,
  checkPublishInput,
  checkPublishInputs,
  checkSessionKnown,
  checkToken,
  checkTokens,
  Problems,
  type ResolvedNack,
  resolveNackOptions,
  resolveQueueOptions,
  resolveSessionOptions,
  sessionIdOf,
  show,
} from './validate.js';

interface Release {
  delivery: DeliveryRecord;
  outcome: AttemptOutcome;
}

/**
 * The semantics of SPEC.md as a pure state machine: no I/O, no timers, no wall clock. Every
 * operation takes `now`, validates its arguments, then advances the clock (R3) and acts.
 * Every operation is O(log n) in the number of jobs, or O(k log n) for k jobs it touches.
 */
export class LeaseQueue {
  private settings: ResolvedQueueOptions;
  private clockValue = 0;
  private nextToken = 1;
  private nextSeq = 1;
  private nextSessionNumber = 1;
  private nextGeneratedId = 1;
  private readonly jobs = new Map<string, JobRecord>();
  private readonly ready = new ReadyList<JobRecord>();
  private readonly delayed = new IndexedHeap<JobRecord>(byAvailability);
  /** Live deliveries by token; insertion order is token order. */
  private readonly active = new Map<number, DeliveryRecord>();
  private readonly deadlines = new IndexedHeap<DeliveryRecord>(byDeadline);
  private readonly ackTimers = new IndexedHeap<AckTimer>(byAckTimer);
  private readonly heartbeats = new IndexedHeap<SessionRecord>(byHeartbeatEnd);
  private readonly sessions = new Map<string, SessionRecord>();
  /** Dead jobs in the order they died. */
  private readonly dead = new Map<string, JobRecord>();
  /** Acked ids still refused as duplicates (R4), with the tick they are forgotten at. */
  private readonly remembered = new Map<string, number>();
  private readonly counters = newCounters();

  constructor(options?: QueueOptions) {
    this.settings = resolveQueueOptions(options);
  }

  /** The queue's options with defaults filled in. */
  get options(): ResolvedQueueOptions {
    return { ...this.settings };
  }

  /**
   * Changes options for what happens next: deliveries already made keep their deadlines.
   * Unnamed options keep their values. Takes no time.
   */
  reconfigure(options: QueueOptions): ResolvedQueueOptions {
    this.settings = resolveQueueOptions({ ...this.settings, ...options });
    return this.options;
  }

  /** The token the next reservation gets, and the number of the next session (R6). */
  numbering(): { nextToken: number; nextSession: number } {
    return { nextToken: this.nextToken, nextSession: this.nextSessionNumber };
  }

  /**
   * Continues token and session numbering from an earlier queue of the same name, so that a
   * token or session id handed out before can never name anything of this queue. Never lowers.
   */
  continueCounters(from: { nextToken: number; nextSession: number }): void {
    this.nextToken = Math.max(this.nextToken, from.nextToken);
    this.nextSessionNumber = Math.max(this.nextSessionNumber, from.nextSession);
  }

  /**
   * The earliest tick at which time alone changes the queue (a lease or session runs out, a
   * delayed job becomes ready), or undefined. Lets a waiting receiver sleep until then.
   */
  nextEventAt(): number | undefined {
    const heartbeat = this.heartbeats.peek();
    const at = Math.min(
      this.deadlines.peek()?.deadline ?? Number.POSITIVE_INFINITY,
      this.delayed.peek()?.availableAt ?? Number.POSITIVE_INFINITY,
      this.ackTimers.peek()?.at ?? Number.POSITIVE_INFINITY,
      heartbeat === undefined
        ? Number.POSITIVE_INFINITY
        : heartbeat.lastHeartbeat + heartbeat.timeout,
    );
    return at === Number.POSITIVE_INFINITY ? undefined : at;
  }

  /** The queue's clock: the largest `now` it has accepted. Takes no time. */
  get clock(): number {
    return this.clockValue;
  }

  publish(now: number, input: PublishInput = {}): PublishResult {
    checkPublishInput(input);
    this.advance(now);
    return this.insert(now, input);
  }

  /** All-or-nothing: every entry is checked before any is published (R5). */
  publishBatch(now: number, inputs: readonly PublishInput[]): PublishResult[] {
    if (!Array.isArray(inputs))
      throw new ValidationError(`jobs must be an array, got ${show(inputs)}`);
    checkPublishInputs(inputs, 'jobs');
    this.advance(now);
    return inputs.map((input) => this.insert(now, input));
  }

  reserve(now: number, options: ReserveOptions = {}): Delivery[] {
    const problems = new Problems();
    if (!problems.object('options', options)) problems.throwIfAny();
    const max = options.max ?? 1;
    const visibility = options.visibility ?? this.settings.visibility;
    problems.positiveInteger('max', max);
    problems.positiveInteger('visibility', visibility);
    problems.throwIfAny();
    if (options.session !== undefined) checkSessionKnown(options.session, this.nextSessionNumber);
    this.advance(now);
    const session =
      options.session === undefined ? undefined : this.openSessionRecord(options.session);
    let count = Math.min(max, this.settings.prefetch - this.active.size, this.ready.length);
    if (session !== undefined) count = Math.min(count, session.prefetch - session.deliveries.size);
    const deadline = now + Math.min(visibility, this.settings.maxLease);
    const deliveries: Delivery[] = [];
    for (let i = 0; i < count; i++) {
      deliveries.push(this.deliver(this.ready.shift() as JobRecord, now, deadline, session));
    }
    return deliveries;
  }

  /** R8: completes the live delivery named by `token`; false (and no change) when stale. */
  ack(now: number, token: number): boolean {
    checkToken(token);
    this.advance(now);
    return this.ackOne(now, token);
  }

  ackMany(now: number, tokens: readonly number[]): boolean[] {
    if (!Array.isArray(tokens))
      throw new ValidationError(`tokens must be an array, got ${show(tokens)}`);
    checkTokens(tokens);
    this.advance(now);
    return tokens.map((token) => this.ackOne(now, token));
  }

  /** R9: requeue (front of ready, or delayed) or dead-letter a live delivery. */
  nack(now: number, token: number, options?: NackOptions): boolean {
    checkToken(token);
    const resolved = resolveNackOptions(options);
    this.advance(now);
    const delivery = this.active.get(token);
    if (delivery === undefined) {
      this.counters.staleNacks += 1;
      return false;
    }
    this.settleNacks([delivery], now, resolved);
    return true;
  }

  /** The same as `nack` (RabbitMQ's basic.reject is nack without `multiple`). */
  reject(now: number, token: number, options?: NackOptions): boolean {
    return this.nack(now, token, options);
  }

  /** R10: moves a live delivery's deadline to now + visibility, capped by maxLease. */
  extend(now: number, token: number, visibility: number): number | null {
    const problems = new Problems();
    problems.positiveInteger('token', token);
    problems.positiveInteger('visibility', visibility);
    problems.throwIfAny();
    this.advance(now);
    const delivery = this.active.get(token);
    if (delivery === undefined) {
      this.counters.staleExtends += 1;
      return null;
    }
    delivery.deadline = Math.min(now + visibility, delivery.deliveredAt + this.settings.maxLease);
    this.deadlines.update(delivery);
    this.scheduleAckTimer(delivery);
    this.counters.extensions += 1;
    return delivery.deadline;
  }

  /** R16: opens a consumer session; opening counts as a heartbeat. */
  openSession(now: number, options?: SessionOptions): string {
    const resolved = resolveSessionOptions(options);
    this.advance(now);
    const session: SessionRecord = {
      id: sessionIdOf(this.nextSessionNumber++),
      ...resolved,
      lastHeartbeat: now,
      deliveries: new Map(),
      heapIndex: -1,
    };
    this.sessions.set(session.id, session);
    if (session.timeout !== Number.POSITIVE_INFINITY) this.heartbeats.push(session);
    return session.id;
  }

  heartbeat(now: number, sessionId: string): void {
    checkSessionKnown(sessionId, this.nextSessionNumber);
    this.advance(now);
    const session = this.openSessionRecord(sessionId);
    session.lastHeartbeat = now;
    if (this.heartbeats.has(session)) this.heartbeats.update(session);
  }

  /** Ends the session and releases its live deliveries at once (R12, R13). */
  closeSession(now: number, sessionId: string): number {
    checkSessionKnown(sessionId, this.nextSessionNumber);
    this.advance(now);
    const session = this.openSessionRecord(sessionId);
    const released: Release[] = [];
    this.endSession(session, now, released);
    this.release(released, now);
    return released.length;
  }

  /** R11: acks every live delivery of the session with a token ≤ `token`. */
  ackUpTo(now: number, sessionId: string, token: number): number {
    const targets = this.upTo(now, sessionId, token);
    for (const delivery of targets) this.ackOne(now, delivery.token);
    return targets.length;
  }

  /** R11: nacks every live delivery of the session with a token ≤ `token`. */
  nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions): number {
    const resolved = resolveNackOptions(options);
    const targets = this.upTo(now, sessionId, token);
    this.settleNacks(targets, now, resolved);
    return targets.length;
  }

  /** R14: moves dead jobs (all, or those named) to the back of ready with deliveryCount 0. */
  redrive(now: number, ids?: readonly string[]): number {
    checkIdList(ids);
    this.advance(now);
    let moved = 0;
    for (const job of this.deadJobs(ids)) {
      this.dead.delete(job.id);
      job.state = 'ready';
      job.deliveryCount = 0;
      job.deadReason = undefined;
      job.readySince = now;
      this.ready.pushBack(job);
      moved += 1;
    }
    this.counters.redriven += moved;
    return moved;
  }

  /** Removes dead jobs for good (all, or those named). */
  purge(now: number, ids?: readonly string[]): number {
    checkIdList(ids);
    this.advance(now);
    let purged = 0;
    for (const job of this.deadJobs(ids)) {
      this.dead.delete(job.id);
      this.jobs.delete(job.id);
      purged += 1;
    }
    this.counters.purged += purged;
    return purged;
  }

  /** R17 gauges and counters. An operation: it advances the clock to `now` first. */
  stats(now: number): QueueStats {
    this.advance(now);
    const oldest = this.ready.oldestReadySince();
    return {
      clock: this.clockValue,
      ready: this.ready.length,
      delayed: this.delayed.size,
      active: this.active.size,
      dead: this.dead.size,
      sessions: this.sessions.size,
      oldestReadyAge: oldest === undefined ? 0 : now - oldest,
      ...copyCounters(this.counters),
    };
  }

  /** A copy of the whole state. Takes no time and changes nothing. */
  inspect(): InspectView {
    return {
      clock: this.clockValue,
      ready: Array.from(this.ready.values(), (job) => job.id),
      delayed: [...this.delayed.values()]
        .sort((a, b) => (byAvailability(a, b) ? -1 : 1))
        .map((job) => ({ id: job.id, availableAt: job.availableAt })),
      active: Array.from(this.active.values(), (d) => ({
        token: d.token,
        id: d.job.id,
        deadline: d.deadline,
        deliveryCount: d.job.deliveryCount,
        ...(d.session === undefined ? {} : { session: d.session.id }),
      })),
      dead: Array.from(this.dead.values(), (job) => ({
        id: job.id,
        reason: job.deadReason as string,
        deliveryCount: job.deliveryCount,
      })),
    };
  }

  /** The live deliveries in token order, with their delivery times. Takes no time. */
  deliveries(): LiveDelivery[] {
    return Array.from(this.active.values(), (d) => ({
      token: d.token,
      id: d.job.id,
      deliveredAt: d.deliveredAt,
      deadline: d.deadline,
      deliveryCount: d.job.deliveryCount,
      ...(d.session === undefined ? {} : { session: d.session.id }),
    }));
  }

  /** The dead jobs with their history, in the order they died. Takes no time. */
  deadLetters(): DeadLetter[] {
    return Array.from(this.dead.values(), (job) => ({
      id: job.id,
      payload: job.payload,
      reason: job.deadReason as string,
      deliveryCount: job.deliveryCount,
      deadAt: job.deadAt,
      history: job.history === undefined ? [] : job.history.map((attempt) => ({ ...attempt })),
    }));
  }

  /** One job by id with its attempt history, or undefined. Takes no time. */
  job(id: string): JobView | undefined {
    const job = this.jobs.get(id);
    if (job === undefined) return undefined;
    const delivery = job.delivery;
    return {
      id: job.id,
      payload: job.payload,
      state: job.state,
      deliveryCount: job.deliveryCount,
      publishedAt: job.publishedAt,
      ...(job.state === 'delayed' ? { availableAt: job.availableAt } : {}),
      ...(delivery === undefined ? {} : { token: delivery.token, deadline: delivery.deadline }),
      ...(job.state === 'dead' ? { reason: job.deadReason as string, deadAt: job.deadAt } : {}),
      history: job.history === undefined ? [] : job.history.map((attempt) => ({ ...attempt })),
    };
  }

  // --- R3: the passage of time -------------------------------------------------------------

  private advance(now: number): void {
    checkNow(now, this.clockValue);
    this.clockValue = now;
    if (this.leaseOrSessionDue(now)) {
      const released: Release[] = [];
      this.endTimedOutSessions(now, released);
      while ((this.deadlines.peek()?.deadline ?? Number.POSITIVE_INFINITY) <= now) {
        released.push({ delivery: this.deadlines.pop() as DeliveryRecord, outcome: 'expired' });
      }
      if (released.length > 0) this.release(released, now);
    }
    this.promoteDelayed(now);
    this.forgetAcked(now);
  }

  private leaseOrSessionDue(now: number): boolean {
    const heartbeat = this.heartbeats.peek();
    return (
      (this.deadlines.peek()?.deadline ?? Number.POSITIVE_INFINITY) <= now ||
      (this.ackTimers.peek()?.at ?? Number.POSITIVE_INFINITY) <= now ||
      (heartbeat !== undefined && heartbeat.lastHeartbeat + heartbeat.timeout <= now)
    );
  }

  /** R3a, in the order the sessions ended, so each release knows when its session died. */
  private endTimedOutSessions(now: number, released: Release[]): void {
    for (;;) {
      const byHeartbeat = this.heartbeats.peek();
      const byAck = this.ackTimers.peek();
      const heartbeatEnd = byHeartbeat ? byHeartbeat.lastHeartbeat + byHeartbeat.timeout : Infinity;
      const ackEnd = byAck ? byAck.at : Number.POSITIVE_INFINITY;
      const endedAt = Math.min(heartbeatEnd, ackEnd);
      if (endedAt > now) return;
      const session =
        heartbeatEnd <= ackEnd
          ? (byHeartbeat as SessionRecord)
          : (byAck as AckTimer).delivery.session;
      this.endSession(session as SessionRecord, endedAt, released);
    }
  }

  private endSession(session: SessionRecord, endedAt: number, released: Release[]): void {
    this.sessions.delete(session.id);
    this.heartbeats.remove(session);
    for (const delivery of session.deliveries.values()) {
      this.deadlines.remove(delivery);
      // Its ack timer must not end this session a second time.
      if (delivery.ackTimer !== undefined) this.ackTimers.remove(delivery.ackTimer);
      delivery.ackTimer = undefined;
      // A delivery whose own lease ran out before its session died was lost to expiry.
      const outcome = delivery.deadline <= endedAt ? 'expired' : 'session-ended';
      released.push({ delivery, outcome });
    }
  }

  /** R12: released deliveries return together, in token order, to the front of ready. */
  private release(released: Release[], now: number): void {
    released.sort((a, b) => a.delivery.token - b.delivery.token);
    const jobs: JobRecord[] = [];
    for (const { delivery, outcome } of released) {
      if (outcome === 'expired') this.counters.expiries += 1;
      else this.counters.sessionReleases += 1;
      jobs.push(this.endDelivery(delivery, now, outcome, undefined));
    }
    this.requeue(jobs, now, 0);
  }

  private promoteDelayed(now: number): void {
    while ((this.delayed.peek()?.availableAt ?? Number.POSITIVE_INFINITY) <= now) {
      const job = this.delayed.pop() as JobRecord;
      job.state = 'ready';
      job.readySince = job.availableAt;
      this.ready.pushBack(job);
    }
  }

  private forgetAcked(now: number): void {
    if (this.remembered.size === 0) return;
    // Ids are remembered in ack order with one window, so the oldest are forgotten first.
    for (const [id, forgetAt] of this.remembered) {
      if (forgetAt > now) return;
      this.remembered.delete(id);
    }
  }

  // --- transitions ---------------------------------------------------------------------------

  private insert(now: number, input: PublishInput): PublishResult {
    const id = input.id ?? this.generateId();
    if (this.jobs.has(id) || this.remembered.has(id)) {
      this.counters.duplicates += 1;
      return { id, duplicate: true };
    }
    const delay = input.delay ?? 0;
    const job: JobRecord = {
      id,
      payload: input.payload,
      seq: this.nextSeq++,
      publishedAt: now,
      state: 'ready',
      deliveryCount: 0,
      readySince: now,
      availableAt: now + delay,
      delivery: undefined,
      history: undefined,
      deadReason: undefined,
      deadAt: 0,
      heapIndex: -1,
    };
    this.jobs.set(id, job);
    if (delay > 0) {
      job.state = 'delayed';
      this.delayed.push(job);
    } else {
      this.ready.pushBack(job);
    }
    this.counters.published += 1;
    return { id, duplicate: false };
  }

  private deliver(
    job: JobRecord,
    now: number,
    deadline: number,
    session: SessionRecord | undefined,
  ): Delivery {
    const delivery: DeliveryRecord = {
      token: this.nextToken++,
      job,
      deliveredAt: now,
      deadline,
      session,
      ackTimer: undefined,
      heapIndex: -1,
    };
    job.state = 'active';
    job.deliveryCount += 1;
    job.delivery = delivery;
    this.active.set(delivery.token, delivery);
    this.deadlines.push(delivery);
    if (session !== undefined) {
      session.deliveries.set(delivery.token, delivery);
      this.scheduleAckTimer(delivery);
    }
    this.counters.deliveries += 1;
    if (job.deliveryCount > 1) this.counters.redeliveries += 1;
    return {
      token: delivery.token,
      id: job.id,
      payload: job.payload,
      deadline,
      deliveryCount: job.deliveryCount,
      redelivered: job.deliveryCount > 1,
    };
  }

  private ackOne(now: number, token: number): boolean {
    const delivery = this.active.get(token);
    if (delivery === undefined) {
      this.counters.staleAcks += 1;
      return false;
    }
    const job = this.endDelivery(delivery, now, 'acked', undefined);
    this.jobs.delete(job.id);
    if (this.settings.dedupWindow > 0) this.remembered.set(job.id, now + this.settings.dedupWindow);
    const elapsed = now - delivery.deliveredAt;
    const timing = this.counters.processingTime;
    timing.count += 1;
    timing.sum += elapsed;
    if (elapsed > timing.max) timing.max = elapsed;
    this.counters.acks += 1;
    return true;
  }

  /** Nacks live deliveries given in token order, as one step. */
  private settleNacks(deliveries: DeliveryRecord[], now: number, nack: ResolvedNack): void {
    const outcome = nack.requeue ? 'requeued' : 'rejected';
    const reason = nack.requeue ? undefined : nack.reason;
    const jobs = deliveries.map((delivery) => this.endDelivery(delivery, now, outcome, reason));
    this.counters.nacks += jobs.length;
    if (nack.requeue) this.requeue(jobs, now, nack.delay);
    else for (const job of jobs) this.deadLetter(job, now, nack.reason);
  }

  /** Ends a live delivery: unlinks it everywhere and records the attempt. */
  private endDelivery(
    delivery: DeliveryRecord,
    now: number,
    outcome: AttemptOutcome,
    reason: string | undefined,
  ): JobRecord {
    const job = delivery.job;
    this.active.delete(delivery.token);
    this.deadlines.remove(delivery);
    if (delivery.ackTimer !== undefined) this.ackTimers.remove(delivery.ackTimer);
    delivery.session?.deliveries.delete(delivery.token);
    job.delivery = undefined;
    // An acked job is gone (R8): nobody can read its history, so none is written.
    if (outcome === 'acked') return job;
    recordAttempt(job, {
      token: delivery.token,
      deliveredAt: delivery.deliveredAt,
      endedAt: now,
      outcome,
      ...(reason === undefined ? {} : { reason }),
    });
    return job;
  }

  /**
   * Returns jobs (in token order) to ready: R13 dead-letters those out of deliveries; the rest
   * go to the front in the same order, or to delayed when `delay` > 0.
   */
  private requeue(jobs: JobRecord[], now: number, delay: number): void {
    const back: JobRecord[] = [];
    for (const job of jobs) {
      if (job.deliveryCount >= this.settings.maxDeliveries)
        this.deadLetter(job, now, 'max-deliveries');
      else back.push(job);
    }
    if (delay > 0) {
      for (const job of back) {
        job.state = 'delayed';
        job.availableAt = now + delay;
        this.delayed.push(job);
      }
      return;
    }
    for (let i = back.length - 1; i >= 0; i--) {
      const job = back[i] as JobRecord;
      job.state = 'ready';
      job.readySince = now;
      this.ready.pushFront(job);
    }
  }

  /** R14: never silent; the job keeps its history in the dead set. */
  private deadLetter(job: JobRecord, now: number, reason: string): void {
    job.state = 'dead';
    job.deadReason = reason;
    job.deadAt = now;
    this.dead.set(job.id, job);
    this.counters.deadLetters[reason] = (this.counters.deadLetters[reason] ?? 0) + 1;
  }

  /** Keeps the delivery's ack-timer iff it can still trip its session's ackTimeout. */
  private scheduleAckTimer(delivery: DeliveryRecord): void {
    const session = delivery.session;
    if (session === undefined || session.ackTimeout === Number.POSITIVE_INFINITY) return;
    const at = delivery.deliveredAt + session.ackTimeout;
    const trips = at < delivery.deadline;
    if (trips && delivery.ackTimer === undefined) {
      delivery.ackTimer = { at, delivery, heapIndex: -1 };
      this.ackTimers.push(delivery.ackTimer);
    } else if (!trips && delivery.ackTimer !== undefined) {
      this.ackTimers.remove(delivery.ackTimer);
      delivery.ackTimer = undefined;
    }
  }

  // --- lookups --------------------------------------------------------------------------------

  private upTo(now: number, sessionId: string, token: number): DeliveryRecord[] {
    checkSessionKnown(sessionId, this.nextSessionNumber);
    checkToken(token);
    this.advance(now);
    const session = this.openSessionRecord(sessionId);
    const targets: DeliveryRecord[] = [];
    for (const delivery of session.deliveries.values()) {
      if (delivery.token > token) break;
      targets.push(delivery);
    }
    return targets;
  }

  private *deadJobs(ids: readonly string[] | undefined): Generator<JobRecord> {
    if (ids === undefined) {
      yield* [...this.dead.values()];
      return;
    }
    for (const id of ids) {
      const job = this.dead.get(id);
      if (job !== undefined) yield job;
    }
  }

  /** After R3: the session must still be open. */
  private openSessionRecord(sessionId: string): SessionRecord {
    const session = this.sessions.get(sessionId);
    if (session === undefined) throw new SessionClosedError(sessionId);
    return session;
  }

  private generateId(): string {
    let id = `job-${this.nextGeneratedId++}`;
    while (this.jobs.has(id) || this.remembered.has(id)) id = `job-${this.nextGeneratedId++}`;
    return id;
  }
}
