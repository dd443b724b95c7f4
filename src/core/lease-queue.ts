import { copyCounters, newCounters } from './counters.js';
import { type DeadLetterKind, nackKind } from './dead-letter-kinds.js';
import { ClockError, LeaseqError, QueueFullError, SessionClosedError } from './errors.js';
import { Fifo } from './fifo.js';
import { IndexedHeap } from './heap.js';
import { KeyedOrder } from './keyed-order.js';
import {
  build,
  type MoveJobsOperation,
  type NackDisposition,
  type OpenSessionOperation,
  type Operation,
  type OperationResults,
  type OperationType,
  type Outcome,
  type PublishJob,
  type PurgeQueueResult,
  type ReserveOperation,
  type ResultOf,
  sessionOf,
} from './operations.js';
import type { PayloadCodec } from './payload.js';
import type { JobTransfer, QueueLinks } from './queue-links.js';
import { ReadyBands } from './ready-bands.js';
import {
  type AckTimer,
  byAckTimer,
  byAvailability,
  byDeadline,
  byExpiry,
  byHeartbeatEnd,
  type DeliveryRecord,
  type ExpiryRecord,
  type GroupRecord,
  type JobRecord,
  recordAttempt,
  type SessionRecord,
} from './records.js';
import { checkLookedUpId, generatedId, hasGeneratedForm } from './text.js';
import type {
  AttemptOutcome,
  DeadLetter,
  DeadLetterOrigin,
  DeadLetterPage,
  DeadLetterPageOptions,
  Delivery,
  DeliveryPage,
  DeliveryPageOptions,
  InspectOptions,
  InspectView,
  JobView,
  LiveDelivery,
  MoveJobsOptions,
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
  checkDeadLetterPage,
  checkDeliveryPage,
  checkInspectOptions,
  checkNow,
  checkSessionKnown,
  DEAD_LETTER_PAGE_CHARS,
  deadLetterCursor,
  deliveryCursor,
  resolveQueueOptions,
  sessionIdOf,
  updatedQueueOptions,
} from './validate.js';

interface Release {
  delivery: DeliveryRecord;
  outcome: AttemptOutcome;
}

/** How many ids of ended sessions a queue keeps for its engine's wake-ups (see endedSince). */
const RECENT_ENDS = 64;

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
  /** How many sessions ended so far, closed or timed out (see sessionsEnded). */
  private endedSessionCount = 0;
  /** The ids of the latest sessions to end, at most RECENT_ENDS, oldest first (see endedSince). */
  private readonly recentEnds: string[] = [];
  /**
   * Whether an id of the generated form (`job-…`) came from a caller or another queue: until
   * one does, a generated id is unique by construction and needs no look-up.
   */
  private generatedFormSeen = false;
  private readonly jobs = new Map<string, JobRecord>();
  private readonly ready = new ReadyBands<JobRecord>();
  private readonly delayed = new IndexedHeap<JobRecord>(byAvailability);
  /** Live deliveries by token; insertion order is token order. */
  private readonly active = new Map<number, DeliveryRecord>();
  private readonly deadlines = new IndexedHeap<DeliveryRecord>(byDeadline);
  private readonly ackTimers = new IndexedHeap<AckTimer>(byAckTimer);
  private readonly heartbeats = new IndexedHeap<SessionRecord>(byHeartbeatEnd);
  private readonly sessions = new Map<string, SessionRecord>();
  /** Dead jobs in the order they died. */
  private readonly dead = new Map<string, JobRecord>();
  /** Each dead job's place in the order of deaths (from 1): where a page of them starts. */
  private readonly deadSeqs = new WeakMap<JobRecord, number>();
  /** The dead jobs by that place: a page read from where it starts, not from the first. */
  private readonly deadOrder = new KeyedOrder<JobRecord>(
    (job, seq) => this.dead.get(job.id) === job && this.deadSeqs.get(job) === seq,
  );
  private nextDeadSeq = 1;
  /** Message groups with members (R24), by key; a group without members is forgotten. */
  private readonly groups = new Map<string, GroupRecord>();
  private waitingCount = 0;
  /**
   * The waiting jobs of every group (R24) by group sequence number, the order inspect shows
   * them in, so that a page of them is read, not all of them sorted. A job joins a group with a
   * group sequence number above every other's: each is added at the end. One that goes on is
   * left for a reading to find gone (no cost on the way through a group); one cancelled, which
   * would still read as waiting, is taken out.
   */
  private readonly waitingOrder = new KeyedOrder<JobRecord>(
    (job, groupSeq) => job.state === 'waiting' && job.traits?.groupSeq === groupSeq,
  );
  /**
   * Acked ids still refused as duplicates (R4), with the tick they are forgotten at and the
   * group sequence number a duplicate publish answers (R29).
   */
  private readonly remembered = new Map<string, RememberedId>();
  /**
   * The same records in the order they were remembered (ack order), which forgetting reads
   * from its front: a new iterator of the map would pass over every entry deleted before
   * (until the map is rehashed), O(window) per step.
   */
  private readonly rememberedOrder = new Fifo<RememberedId>();
  private readonly counters = newCounters();
  /**
   * R26: where jobs that came by dead-lettering died, by id. Beside the records, not in them,
   * so that a queue without dead-letter queues carries nothing for it.
   */
  private readonly origins = new Map<string, DeadLetterOrigin>();
  /**
   * R30: the ready and delayed jobs that expire, by when. Beside the records, and empty unless
   * the queue has a retention or jobs with an expiresAt: a queue without either pays nothing.
   */
  private readonly expiryHeap = new IndexedHeap<ExpiryRecord>(byExpiry);
  private readonly expiries = new Map<JobRecord, ExpiryRecord>();
  /** The engine's other queues (R26) and this queue's name among them; none when alone. */
  private links: QueueLinks | undefined;
  private name = '';

  /**
   * `payloads`: how the queue keeps payloads (see PayloadCodec); without one it keeps the
   * values it is given and answers with them.
   */
  constructor(
    options?: QueueOptions,
    private readonly payloads?: PayloadCodec,
  ) {
    this.settings = resolveQueueOptions(options);
  }

  /**
   * Connects this queue to the other queues of its engine under `name`, so that its dead jobs
   * can move to a dead-letter queue and `moveJobs` can move jobs out (R26). Takes no time.
   */
  connect(name: string, links: QueueLinks): void {
    this.name = name;
    this.links = links;
  }

  /**
   * R26: takes a job from another queue of the engine into the back of ready, deliveryCount 0,
   * history kept, in the step of the queue it leaves. False when the id is present or
   * remembered here (R4): the job then stays where it was. Runs no R3 here: the job becomes
   * ready at `now`, or at this queue's time when that is later.
   */
  admit(now: number, transfer: JobTransfer): boolean {
    const at = Math.max(now, this.clockValue);
    if (this.jobs.has(transfer.id) || this.rememberedId(transfer.id, at) !== undefined) {
      return false;
    }
    this.noteId(transfer.id);
    const seq = this.nextSeq++;
    const job: JobRecord = {
      id: transfer.id,
      payload: transfer.payload,
      seq,
      traits:
        transfer.priority === 0 && transfer.group === undefined
          ? undefined
          : {
              priority: transfer.priority,
              group: transfer.group,
              groupSeq: seq,
              // An expiresAt stays behind (R30): it is a time of the queue the job left.
              expiresAt: undefined,
            },
      publishedAt: transfer.publishedAt,
      state: 'ready',
      deliveryCount: 0,
      availableAt: at,
      delivery: undefined,
      history: transfer.history.length === 0 ? undefined : transfer.history.map((a) => ({ ...a })),
      deadReason: undefined,
      deadAt: 0,
      heapIndex: -1,
    };
    this.jobs.set(job.id, job);
    if (transfer.origin !== undefined) this.origins.set(job.id, { ...transfer.origin });
    // It keeps its priority and group (R23, R24), joining the back of its group here.
    if (job.traits?.group !== undefined && this.joinGroup(job)) return true;
    this.ready.pushBack(job);
    this.watchExpiry(job);
    return true;
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
    const retention = this.settings.retention;
    this.settings = updatedQueueOptions(this.settings, options);
    if (this.settings.retention !== retention) this.rewatchExpiries();
    return this.options;
  }

  /** The token the next reservation gets, and the number of the next session (R6). */
  numbering(): {
    /** The token the next reservation gets. */
    nextToken: number;
    /** The number the next session opened gets. */
    nextSession: number;
  } {
    return { nextToken: this.nextToken, nextSession: this.nextSessionNumber };
  }

  /**
   * Continues token and session numbering from an earlier queue of the same name, so that a
   * token or session id handed out before can never name anything of this queue. Never lowers.
   */
  continueCounters(from: {
    /** The earlier queue's next token: this queue's next one is at least it. */
    nextToken: number;
    /** The earlier queue's next session number: this queue's next one is at least it. */
    nextSession: number;
  }): void {
    this.nextToken = Math.max(this.nextToken, from.nextToken);
    this.nextSessionNumber = Math.max(this.nextSessionNumber, from.nextSession);
  }

  /**
   * The earliest tick at which time alone changes the queue (a lease or session runs out, a
   * delayed job becomes ready, a job expires), or undefined. Lets a waiting receiver sleep until
   * then.
   */
  nextEventAt(): number | undefined {
    const heartbeat = this.heartbeats.peek();
    const at = Math.min(
      this.deadlines.peek()?.deadline ?? Number.POSITIVE_INFINITY,
      this.delayed.peek()?.availableAt ?? Number.POSITIVE_INFINITY,
      this.ackTimers.peek()?.at ?? Number.POSITIVE_INFINITY,
      this.expiryHeap.peek()?.at ?? Number.POSITIVE_INFINITY,
      heartbeat === undefined
        ? Number.POSITIVE_INFINITY
        : heartbeat.lastHeartbeat + heartbeat.timeout,
    );
    return at === Number.POSITIVE_INFINITY ? undefined : at;
  }

  /**
   * How many jobs are ready to be handed out now, as the last operation left them (no R3 here):
   * group members waiting behind their group's head (R24) and delayed jobs not counted. Takes
   * no time.
   */
  get readyCount(): number {
    return this.ready.length;
  }

  /**
   * How many sessions of this queue have ended so far, closed or timed out (R16): an engine
   * compares it across an operation to learn whether that operation ended one. Takes no time.
   */
  get sessionsEnded(): number {
    return this.endedSessionCount;
  }

  /**
   * The ids of the sessions that ended since `sessionsEnded` read `count`, in the order they
   * ended; undefined when more ended than this queue keeps ids of (the last 64). Takes no time.
   */
  endedSince(count: number): string[] | undefined {
    const ended = this.endedSessionCount - count;
    if (ended > this.recentEnds.length) return undefined;
    return this.recentEnds.slice(this.recentEnds.length - ended);
  }

  /** The queue's time (ms): the largest `now` it has accepted (R2). Takes no time. */
  get queueTime(): number {
    return this.clockValue;
  }

  /**
   * Applies one parsed operation (see `parseOperation`): checks `now` (R2), advances the clock
   * (R3) and acts. State errors (an ended session) are thrown after R3, as the rules say.
   */
  apply<O extends Operation>(now: number, operation: O): ResultOf<O> {
    // The clock first (R2): a batch at a refused now is refused whole (R20), whatever its first
    // operation names.
    checkNow(now, this.clockValue);
    const session = sessionOf(operation);
    if (session !== undefined) checkSessionKnown(session, this.nextSessionNumber);
    // A payload the codec refuses refuses its publish before anything changes, R3 included.
    const payloads = operation.type === 'publish' ? this.storedPayloads(operation.jobs) : undefined;
    this.advance(now);
    return this.act(now, operation, payloads) as ResultOf<O>;
  }

  /** The payloads of a publish as the queue keeps them, by job; undefined: as given. */
  private storedPayloads(jobs: readonly PublishJob[]): unknown[] | undefined {
    const codec = this.payloads;
    if (codec === undefined) return undefined;
    return jobs.map((job, index) => codec.store(job.payload, index, jobs.length));
  }

  /** What the queue answers for a payload it keeps (see PayloadCodec). */
  private loaded(stored: unknown): unknown {
    return this.payloads === undefined ? stored : this.payloads.load(stored);
  }

  /**
   * Applies operations in order at one `now`, each answered on its own: one that fails (a
   * closed session) changes nothing beyond R3 and does not fail the others. A `now` behind
   * the clock refuses the whole batch with a ClockError before anything changes.
   */
  applyBatch(now: number, operations: readonly Operation[]): Outcome[] {
    if (operations.length === 0) checkNow(now, this.clockValue);
    return operations.map((operation) => this.applyOutcome(now, operation));
  }

  /**
   * One operation of a batch: its value, or the typed error that refused it. A ClockError is
   * thrown: the clock is the batch's, and the first operation meets it before anything changed.
   */
  applyOutcome(now: number, operation: Operation): Outcome {
    try {
      return { ok: true, value: this.apply(now, operation) };
    } catch (error) {
      if (error instanceof LeaseqError && !(error instanceof ClockError)) {
        return { ok: false, error };
      }
      throw error;
    }
  }

  // The friendly methods: each builds its operation (checking its arguments) and applies it.

  /**
   * R4: adds a job to the back of ready (or to delayed); an id still present, or remembered, is
   * a duplicate and changes nothing.
   */
  publish(now: number, input: PublishInput = {}): PublishResult {
    return this.apply(now, build.publish(input))[0] as PublishResult;
  }

  /** All-or-nothing: every entry is checked before any is published (R5). */
  publishBatch(now: number, inputs: readonly PublishInput[]): PublishResult[] {
    return this.apply(now, build.publishBatch(inputs));
  }

  /** R6: delivers up to `max` jobs from the front of ready, each with a new token. */
  reserve(now: number, options: ReserveOptions = {}): Delivery[] {
    return this.apply(now, build.reserve(options));
  }

  /** R8: completes the live delivery named by `token`; false (and no change) when stale. */
  ack(now: number, token: number): boolean {
    return this.apply(now, build.ack(token))[0] as boolean;
  }

  /** R8 for each token, in order, in one step: one answer each. */
  ackMany(now: number, tokens: readonly number[]): boolean[] {
    return this.apply(now, build.ackMany(tokens));
  }

  /** R9: requeue (front of ready, or delayed) or dead-letter a live delivery. */
  nack(now: number, token: number, options?: NackOptions): boolean {
    return this.apply(now, build.nack(token, options));
  }

  /** The same as `nack` (RabbitMQ's basic.reject is nack without `multiple`). */
  reject(now: number, token: number, options?: NackOptions): boolean {
    return this.nack(now, token, options);
  }

  /** R10: moves a live delivery's deadline to now + visibility, capped by maxLease. */
  extend(now: number, token: number, visibility: number): number | null {
    return this.apply(now, build.extend(token, visibility));
  }

  /** R16: opens a consumer session; opening counts as a heartbeat. */
  openSession(now: number, options?: SessionOptions): string {
    return this.apply(now, build.openSession(options));
  }

  /** R16: records a heartbeat of the session at `now`; an ended one is a SessionClosedError. */
  heartbeat(now: number, sessionId: string): void {
    this.apply(now, build.heartbeat(sessionId));
  }

  /** Ends the session and releases its live deliveries at once (R12, R13). */
  closeSession(now: number, sessionId: string): number {
    return this.apply(now, build.closeSession(sessionId));
  }

  /** R11: acks every live delivery of the session with a token ≤ `token`. */
  ackUpTo(now: number, sessionId: string, token: number): number {
    return this.apply(now, build.ackUpTo(sessionId, token));
  }

  /** R11: nacks every live delivery of the session with a token ≤ `token`. */
  nackUpTo(now: number, sessionId: string, token: number, options?: NackOptions): number {
    return this.apply(now, build.nackUpTo(sessionId, token, options));
  }

  /** R14: moves dead jobs (all, or those named) to the back of ready with deliveryCount 0. */
  redrive(now: number, ids?: readonly string[]): number {
    return this.apply(now, build.redrive(ids));
  }

  /** Removes dead jobs for good (all, or those named). */
  purge(now: number, ids?: readonly string[]): number {
    return this.apply(now, build.purge(ids));
  }

  /** R19: removes every ready, delayed and active job (and dead ones with `dead: true`). */
  purgeQueue(
    now: number,
    options?: {
      /** true: the dead jobs are removed too. Default false. */
      dead?: boolean;
    },
  ): PurgeQueueResult {
    return this.apply(now, build.purgeQueue(options));
  }

  /** R26: moves ready and delayed jobs to another queue (or each to its origin). */
  moveJobs(now: number, options?: MoveJobsOptions): number {
    return this.apply(now, build.moveJobs(options));
  }

  /** R28: cancels the job `id` (dead with reason `cancelled`, or removed). */
  cancel(
    now: number,
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ): boolean {
    return this.apply(now, build.cancel(id, options));
  }

  /** R17 gauges and counters. An operation: it advances the clock to `now` first. */
  stats(now: number): QueueStats {
    return this.apply(now, build.stats());
  }

  private statsNow(now: number): QueueStats {
    const oldest = this.ready.oldestReadySince();
    return {
      queueTime: this.clockValue,
      ready: this.ready.length,
      delayed: this.delayed.size,
      active: this.active.size,
      dead: this.dead.size,
      waiting: this.waitingCount,
      sessions: this.sessions.size,
      paused: this.settings.paused === true,
      // A job that arrived from a queue whose clock was ahead (R26) became ready after now.
      oldestReadyAge: oldest === undefined ? 0 : Math.max(0, now - oldest),
      ...copyCounters(this.counters),
    };
  }

  /**
   * A copy of the state, each list cut to its first `limit` entries when one is given (default
   * all of them). Takes no time and changes nothing.
   */
  inspect(options?: InspectOptions): InspectView {
    const limit = checkInspectOptions(options) ?? Number.POSITIVE_INFINITY;
    // Each list read in order up to the limit: a page of a long list costs the page, not a sort.
    const waiting = firstOf(this.waitingOrder.after(0), limit, (job) => job.id);
    return {
      queueTime: this.clockValue,
      ready: firstOf(this.ready.values(), limit, (job) => job.id),
      delayed: this.delayedInOrder(limit).map((job) => ({
        id: job.id,
        availableAt: job.availableAt,
      })),
      active: firstOf(this.active.values(), limit, (d) => ({
        token: d.token,
        id: d.job.id,
        deadline: d.deadline,
        deliveryCount: d.job.deliveryCount,
        ...(d.session === undefined ? {} : { session: d.session.id }),
      })),
      dead: firstOf(this.dead.values(), limit, (job) => ({
        id: job.id,
        reason: job.deadReason as string,
        deliveryCount: job.deliveryCount,
      })),
      ...(waiting.length === 0 ? {} : { waiting }),
    };
  }

  /** The live deliveries in token order, with their delivery times. Takes no time. */
  deliveries(): LiveDelivery[] {
    return Array.from(this.active.values(), liveDeliveryView);
  }

  /**
   * A page of the live deliveries, in token order: at most `limit`, those with a token above
   * the page whose `next` is `after` (the active map holds them in token order: tokens only
   * grow). Takes no time.
   */
  deliveryPage(options?: DeliveryPageOptions): DeliveryPage {
    const { limit, after } = checkDeliveryPage(options);
    const deliveries: LiveDelivery[] = [];
    for (const delivery of this.active.values()) {
      if (delivery.token <= after) continue;
      if (deliveries.length === limit) {
        return { deliveries, next: deliveryCursor((deliveries.at(-1) as LiveDelivery).token) };
      }
      deliveries.push(liveDeliveryView(delivery));
    }
    return { deliveries };
  }

  /** The dead jobs with their history, in the order they died. Takes no time. */
  deadLetters(): DeadLetter[] {
    return Array.from(this.dead.values(), (job) => this.deadLetterView(job));
  }

  /**
   * A page of the dead jobs, in the order they died: at most `limit`, those that died after
   * the page whose `next` is `after`; with `payloads: false`, without payloads (none is
   * loaded). With them, the page ends at the job whose payload text reaches
   * DEAD_LETTER_PAGE_CHARS (counted where the queue keeps payloads as JSON text, as every
   * engine does). A job redriven and dead again is at its new place. Takes no time.
   */
  deadLetterPage(options?: DeadLetterPageOptions): DeadLetterPage {
    const { limit, after, payloads } = checkDeadLetterPage(options);
    const deadLetters: DeadLetter[] = [];
    let last = after;
    let chars = 0;
    for (const job of this.deadOrder.after(after)) {
      if (deadLetters.length === limit || chars >= DEAD_LETTER_PAGE_CHARS) {
        return { deadLetters, next: deadLetterCursor(last) };
      }
      deadLetters.push(this.deadLetterView(job, payloads));
      if (payloads && typeof job.payload === 'string') chars += job.payload.length;
      last = this.deadSeqs.get(job) as number;
    }
    return { deadLetters };
  }

  private deadLetterView(job: JobRecord, payloads = true): DeadLetter {
    return {
      id: job.id,
      ...(payloads ? { payload: this.loaded(job.payload) } : {}),
      reason: job.deadReason as string,
      deliveryCount: job.deliveryCount,
      deadAt: job.deadAt,
      history: job.history === undefined ? [] : job.history.map((attempt) => ({ ...attempt })),
      ...originView(this.origins.get(job.id)),
    };
  }

  /** The token of the live delivery of the job `id`, if it has one. Takes no time. */
  liveToken(id: string): number | undefined {
    return this.jobs.get(id)?.delivery?.token;
  }

  /** One job by id with its attempt history, or undefined. Takes no time. */
  job(id: string): JobView | undefined {
    checkLookedUpId(id);
    const job = this.jobs.get(id);
    if (job === undefined) return undefined;
    const delivery = job.delivery;
    return {
      id: job.id,
      payload: this.loaded(job.payload),
      state: job.state,
      deliveryCount: job.deliveryCount,
      publishedAt: job.publishedAt,
      ...(job.traits === undefined || job.traits.priority === 0
        ? {}
        : { priority: job.traits.priority }),
      ...groupView(job),
      ...(job.traits?.expiresAt === undefined ? {} : { expiresAt: job.traits.expiresAt }),
      ...(job.state === 'delayed' ? { availableAt: job.availableAt } : {}),
      ...(delivery === undefined ? {} : { token: delivery.token, deadline: delivery.deadline }),
      ...(job.state === 'dead' ? { reason: job.deadReason as string, deadAt: job.deadAt } : {}),
      history: job.history === undefined ? [] : job.history.map((attempt) => ({ ...attempt })),
      ...originView(this.origins.get(job.id)),
    };
  }

  // --- operations, after R3 --------------------------------------------------------------------

  /** `payloads`: a publish's payloads as the queue keeps them (see storedPayloads). */
  private act(
    now: number,
    op: Operation,
    payloads: readonly unknown[] | undefined,
  ): OperationResults[OperationType] {
    switch (op.type) {
      case 'publish':
        return this.publishNow(now, op.jobs, payloads);
      case 'reserve':
        return this.reserveNow(now, op);
      case 'ack':
        return this.ackTokens(now, op.tokens);
      case 'nack':
        return this.nackOne(now, op.token, op);
      case 'extend':
        return this.extendOne(now, op.token, op.visibility);
      case 'openSession':
        return this.openSessionNow(now, op);
      case 'heartbeat':
        this.heartbeatNow(now, op.session);
        return null;
      case 'closeSession':
        return this.closeSessionNow(now, op.session);
      case 'ackUpTo': {
        const targets = this.upTo(op.session, op.token);
        for (const delivery of targets) this.ackOne(now, delivery.token);
        return targets.length;
      }
      case 'nackUpTo': {
        const targets = this.upTo(op.session, op.token);
        this.settleNacks(targets, now, op);
        return targets.length;
      }
      case 'redrive':
        return this.redriveNow(now, op.ids);
      case 'purge':
        return this.purgeDead(op.ids);
      case 'purgeQueue':
        return this.purgeQueueNow(op.dead);
      case 'moveJobs':
        return this.moveJobsNow(now, op);
      case 'cancel':
        return this.cancelNow(now, op.id, op.remove);
      case 'stats':
        return this.statsNow(now);
    }
  }

  /** R4, R5: `payloads` as the queue keeps them, by job (undefined: as given). */
  private publishNow(
    now: number,
    jobs: readonly PublishJob[],
    payloads: readonly unknown[] | undefined,
  ): PublishResult[] {
    const maxLength = this.settings.maxLength;
    if (maxLength !== undefined) return this.publishBounded(now, jobs, payloads, maxLength);
    const given = givenGeneratedForm(jobs);
    return payloads === undefined
      ? jobs.map((job) => this.insert(now, job, job.payload, given))
      : jobs.map((job, index) => this.insert(now, job, payloads[index], given));
  }

  private ackTokens(now: number, tokens: readonly number[]): boolean[] {
    const results: boolean[] = new Array(tokens.length);
    for (let i = 0; i < tokens.length; i++) results[i] = this.ackOne(now, tokens[i] as number);
    return results;
  }

  private reserveNow(now: number, op: ReserveOperation): Delivery[] {
    const session = op.session === undefined ? undefined : this.openSessionRecord(op.session);
    if (this.settings.paused) return []; // R27
    if (op.ack === 'auto') return this.handOut(now, op.max);
    let count = Math.min(op.max, this.settings.prefetch - this.active.size, this.ready.length);
    if (session !== undefined) count = Math.min(count, session.prefetch - session.deliveries.size);
    const visibility = op.visibility ?? this.settings.visibility;
    const deadline = now + Math.min(visibility, this.settings.maxLease);
    const deliveries: Delivery[] = [];
    for (let i = 0; i < count; i++) {
      deliveries.push(this.deliver(this.ready.shift() as JobRecord, now, deadline, session));
    }
    return deliveries;
  }

  /**
   * R22: at most once. Each job leaves the queue as it is handed out, as if acked at once; no
   * lease is held, so neither prefetch bound applies (RabbitMQ ignores basic.qos for no-ack).
   */
  private handOut(now: number, max: number): Delivery[] {
    const count = Math.min(max, this.ready.length);
    const deliveries: Delivery[] = [];
    for (let i = 0; i < count; i++) {
      const job = this.ready.shift() as JobRecord;
      this.unwatchExpiry(job);
      job.deliveryCount += 1;
      this.forget(job.id);
      this.remember(job, now);
      this.counters.deliveries += 1;
      this.counters.autoAcked += 1;
      if (job.deliveryCount > 1) this.counters.redeliveries += 1;
      deliveries.push({
        token: this.nextToken++,
        id: job.id,
        payload: this.loaded(job.payload),
        deadline: now,
        deliveryCount: job.deliveryCount,
        redelivered: job.deliveryCount > 1,
        ...(job.traits?.group === undefined ? {} : { group: job.traits.group }),
      });
    }
    // The jobs handed out are the front of ready as the call found it; then their groups go on.
    for (const delivery of deliveries) {
      if (delivery.group !== undefined) this.leaveGroup(delivery.group, now);
    }
    return deliveries;
  }

  private nackOne(now: number, token: number, nack: NackDisposition): boolean {
    const delivery = this.active.get(token);
    if (delivery === undefined) {
      this.counters.staleNacks += 1;
      return false;
    }
    this.settleNacks([delivery], now, nack);
    return true;
  }

  private extendOne(now: number, token: number, visibility: number): number | null {
    const delivery = this.active.get(token);
    if (delivery === undefined) {
      this.counters.staleExtends += 1;
      return null;
    }
    delivery.deadline = Math.min(now + visibility, delivery.deliveredAt + this.settings.maxLease);
    this.counters.extensions += 1;
    if (delivery.deadline <= now) {
      // A maxLease lowered since the delivery, already passed: the lease ends at this call, as
      // R3 ends any lease at its deadline (R10), not at the next call.
      this.release([{ delivery, outcome: 'expired' }], now);
      return delivery.deadline;
    }
    this.deadlines.update(delivery);
    this.scheduleAckTimer(delivery);
    return delivery.deadline;
  }

  private openSessionNow(now: number, op: OpenSessionOperation): string {
    const session: SessionRecord = {
      id: sessionIdOf(this.nextSessionNumber++),
      prefetch: op.prefetch,
      timeout: op.timeout,
      ackTimeout: op.ackTimeout,
      lastHeartbeat: now,
      deliveries: new Map(),
      heapIndex: -1,
    };
    this.sessions.set(session.id, session);
    if (session.timeout !== Number.POSITIVE_INFINITY) this.heartbeats.push(session);
    return session.id;
  }

  private heartbeatNow(now: number, sessionId: string): void {
    const session = this.openSessionRecord(sessionId);
    session.lastHeartbeat = now;
    if (this.heartbeats.has(session)) this.heartbeats.update(session);
  }

  private closeSessionNow(now: number, sessionId: string): number {
    const session = this.openSessionRecord(sessionId);
    const released: Release[] = [];
    this.endSession(session, now, released);
    this.release(released, now);
    return released.length;
  }

  private redriveNow(now: number, ids: readonly string[] | undefined): number {
    let moved = 0;
    for (const job of this.deadJobs(ids)) {
      this.leaveDead(job);
      job.deliveryCount = 0;
      job.deadReason = undefined;
      moved += 1;
      // A redriven job joins the back of its group (R24): it waits if the group has members.
      if (job.traits?.group !== undefined) {
        job.traits.groupSeq = this.nextSeq++;
        job.availableAt = now;
        if (this.joinGroup(job)) continue;
      }
      job.state = 'ready';
      job.availableAt = now;
      this.ready.pushBack(job);
      this.watchExpiry(job);
    }
    this.counters.redriven += moved;
    return moved;
  }

  private purgeDead(ids: readonly string[] | undefined): number {
    let purged = 0;
    for (const job of this.deadJobs(ids)) {
      this.leaveDead(job);
      this.forget(job.id);
      purged += 1;
    }
    this.counters.purged += purged;
    return purged;
  }

  /** R19: every job of the queue goes; active deliveries end, so their tokens are refused. */
  private purgeQueueNow(withDead: boolean): PurgeQueueResult {
    const removed: PurgeQueueResult = {
      ready: this.ready.length + this.waitingCount,
      delayed: this.delayed.size,
      active: this.active.size,
      dead: 0,
    };
    for (const delivery of [...this.active.values()]) this.unlinkDelivery(delivery);
    for (const job of [...this.jobs.values()]) {
      if (job.state !== 'dead') this.forget(job.id);
    }
    this.ready.clear();
    this.delayed.clear();
    this.expiryHeap.clear();
    this.expiries.clear();
    this.groups.clear();
    this.waitingOrder.clear();
    this.waitingCount = 0;
    if (withDead) removed.dead = this.purgeDead(undefined);
    this.counters.purged += removed.ready + removed.delayed + removed.active;
    return removed;
  }

  /**
   * R26: ready jobs (front first), then delayed ones, each to `to` or to its origin; a job the
   * target cannot take (missing queue, id present there) stays. A group member that goes on as
   * the one before it moves is looked at after those (when no ids are named, or it is), so a
   * group moves whole: each job looked at once.
   *
   * A call with `max` costs the jobs it looks at, not the queue: ready and delayed are read in
   * order only as far as the call goes (a call in steps of k jobs each, over n, is not O(n²)).
   */
  private moveJobsNow(now: number, op: MoveJobsOperation): number {
    const links = this.links;
    if (links === undefined) return 0;
    const named = op.ids === undefined ? undefined : new Set(op.ids);
    const origins = op.origins === undefined ? undefined : new Set(op.origins);
    const max = op.max ?? Number.POSITIVE_INFINITY;
    const considered = new Set<JobRecord>();
    const moved = new Set<JobRecord>();
    /** The group members that went on meanwhile, looked at after the others, in that order. */
    const wentOn: JobRecord[] = [];
    /** Those of them that went on to delayed: the delayed jobs read below pass over them. */
    const wentOnDelayed = new Set<JobRecord>();
    const consider = (job: JobRecord): void => {
      if (considered.has(job)) return;
      considered.add(job);
      const origin = this.origins.get(job.id)?.queue;
      if (origins !== undefined && (origin === undefined || !origins.has(origin))) return;
      const target = op.to ?? origin;
      if (target === undefined || target === this.name) return;
      if (!links.admit(target, now, { ...this.transferOf(job), origin: undefined })) return;
      moved.add(job);
      this.forget(job.id);
      this.unwatchExpiry(job);
      // A delayed job read below is out of the heap already.
      if (job.state === 'delayed') this.delayed.remove(job);
      // A moved job was its group's first member: the next one goes on (R24).
      if (job.traits?.group !== undefined) {
        const next = this.leaveGroup(job.traits.group, now);
        if (next !== undefined && (named === undefined || named.has(next.id))) {
          wentOn.push(next);
          if (next.state === 'delayed') wentOnDelayed.add(next);
        }
      }
    };
    /** Delayed jobs taken from the heap in order, put back once the call ends unless moved. */
    const taken: JobRecord[] = [];
    if (op.ids !== undefined) {
      for (const job of this.movable(op.ids)) {
        if (moved.size >= max) break;
        consider(job);
      }
    } else {
      // The jobs ready as the call began; a member that goes on meanwhile joins ready's back
      // and is not read here, but with the others that went on.
      for (const job of this.ready.heldNow()) {
        consider(job);
        if (moved.size >= max) break;
      }
      // Then the delayed ones in order, taken from the heap as far as the call goes (the
      // members that went on to delayed are passed over here).
      while (moved.size < max) {
        const job = this.delayed.pop();
        if (job === undefined) break;
        taken.push(job);
        if (!wentOnDelayed.has(job)) consider(job);
      }
    }
    for (let index = 0; index < wentOn.length && moved.size < max; index++) {
      consider(wentOn[index] as JobRecord);
    }
    for (const job of taken) if (!moved.has(job)) this.delayed.push(job);
    // Front first: a job moved from the front of its priority leaves in O(1).
    for (const job of moved) if (job.state === 'ready') this.ready.remove(job);
    return moved.size;
  }

  /** The jobs named to moveJobs that it may move, as named: ready or delayed. */
  private movable(ids: readonly string[]): JobRecord[] {
    return ids.flatMap((id) => {
      const job = this.jobs.get(id);
      return job !== undefined && (job.state === 'ready' || job.state === 'delayed') ? [job] : [];
    });
  }

  /**
   * R28: the job leaves ready, delayed or its live delivery (which ends, recorded as
   * `cancelled`), then dies with reason `cancelled` in this queue's own dead set (never moved
   * to a dead-letter queue: nothing failed), or is gone with `remove`. A dead job stays.
   */
  private cancelNow(now: number, id: string, remove: boolean): boolean {
    const job = this.jobs.get(id);
    if (job === undefined || job.state === 'dead') return false;
    this.unwatchExpiry(job);
    if (job.state === 'ready') this.ready.remove(job);
    else if (job.state === 'delayed') this.delayed.remove(job);
    else if (job.state === 'waiting') this.dropWaiting(job);
    else this.endDelivery(job.delivery as DeliveryRecord, now, 'cancelled', undefined);
    this.counters.cancelled += 1;
    if (remove) {
      this.forget(id);
      // The group's first member leaving lets the next go on (R24); a waiting one just leaves.
      if (job.traits?.group !== undefined && job.state !== 'waiting') {
        this.leaveGroup(job.traits.group, now);
      }
    } else this.deadLetter(job, now, 'cancelled', 'cancelled', false);
    return true;
  }

  /** R4: an acked job's id is refused as a duplicate for the de-duplication window. */
  private remember(job: JobRecord, now: number): void {
    if (this.settings.dedupWindow === 0) return;
    const remembered: RememberedId = {
      id: job.id,
      forgetAt: now + this.settings.dedupWindow,
      groupSeq: groupView(job).groupSeq,
    };
    // An id acked again (its window over, still held behind a longer one) keeps one record.
    const earlier = this.remembered.get(job.id);
    if (earlier !== undefined) this.rememberedOrder.remove(earlier);
    this.remembered.set(job.id, remembered);
    this.rememberedOrder.push(remembered);
  }

  /** The job is gone from this queue (acked, purged, moved, removed). */
  private forget(id: string): void {
    this.jobs.delete(id);
    if (this.origins.size > 0) this.origins.delete(id);
  }

  /**
   * The first `limit` delayed jobs in promotion order: a page read from the heap in order, or
   * all of them sorted (quicker than reading the whole heap in order).
   */
  private delayedInOrder(limit: number): JobRecord[] {
    if (limit < this.delayed.size) return firstOf(this.delayed.ascending(), limit, (job) => job);
    return [...this.delayed.values()].sort((a, b) => (byAvailability(a, b) ? -1 : 1));
  }

  private transferOf(job: JobRecord): JobTransfer {
    return {
      id: job.id,
      payload: job.payload,
      publishedAt: job.publishedAt,
      history: job.history ?? [],
      origin: this.origins.get(job.id),
      priority: job.traits?.priority ?? 0,
      group: job.traits?.group,
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
    if (this.expiryHeap.size > 0) this.expireDue(now);
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
    this.endedSessionCount += 1;
    if (this.recentEnds.length === RECENT_ENDS) this.recentEnds.shift();
    this.recentEnds.push(session.id);
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
      // Ready from its availableAt on (the oldest-ready-age gauge counts from then).
      job.state = 'ready';
      this.ready.pushBack(job);
    }
  }

  /**
   * R3d, R30: every ready or delayed job whose expiry time came dies with reason `expired`, in
   * expiry order, then publish order; the next member of its group may follow in the same step.
   */
  private expireDue(now: number): void {
    /** Ready jobs not at the front of their priority, removed together at the end. */
    const inside = new Set<JobRecord>();
    for (;;) {
      const next = this.expiryHeap.peek();
      if (next === undefined || next.at > now) break;
      this.expiryHeap.pop();
      const job = next.job;
      this.expiries.delete(job);
      if (job.state === 'delayed') this.delayed.remove(job);
      else if (!this.ready.removeIfFront(job)) inside.add(job);
      this.counters.expired += 1;
      this.deadLetter(job, now, 'expired', 'expired');
    }
    if (inside.size > 0) this.ready.removeWhere((job) => inside.has(job));
  }

  private forgetAcked(now: number): void {
    // Ids are remembered in ack order, so with one window the oldest are forgotten first. After
    // updateQueue lowered the window, a later id can be due before earlier ones: it stays in the
    // map until they go, but rememberedId no longer finds it. Such an id published and acked
    // again is remembered anew, its earlier record taken out of the order (see remember).
    const order = this.rememberedOrder;
    for (let first = order.first(); first !== undefined; first = order.first()) {
      if (first.forgetAt > now) return;
      order.shift();
      this.remembered.delete(first.id);
    }
  }

  // --- transitions ---------------------------------------------------------------------------

  /**
   * `payload`: the job's payload as the queue keeps it; `given`: the ids of the generated form
   * that the same publish gives (see givenGeneratedForm).
   */
  private insert(
    now: number,
    input: PublishJob,
    payload: unknown,
    given?: ReadonlySet<string>,
  ): PublishResult {
    let id = input.id;
    let present: JobRecord | undefined;
    let remembered: RememberedId | undefined;
    if (id === undefined) {
      id = this.generateId(given);
    } else {
      this.noteId(id);
      present = this.jobs.get(id);
      remembered = present === undefined ? this.rememberedId(id, now) : undefined;
    }
    if (present !== undefined || remembered !== undefined) {
      this.counters.duplicates += 1;
      // R29: the answer names the group sequence number of the job that is there (or was).
      const groupSeq = present === undefined ? remembered?.groupSeq : groupView(present).groupSeq;
      return { id, duplicate: true, ...(groupSeq === undefined ? {} : { groupSeq }) };
    }
    const delay = input.delay;
    const seq = this.nextSeq++;
    const job: JobRecord = {
      id,
      payload,
      seq,
      traits:
        input.priority === 0 && input.group === undefined && input.expiresAt === undefined
          ? undefined
          : {
              priority: input.priority,
              group: input.group,
              groupSeq: seq,
              expiresAt: input.expiresAt,
            },
      publishedAt: now,
      state: 'ready',
      deliveryCount: 0,
      availableAt: now + delay,
      delivery: undefined,
      history: undefined,
      deadReason: undefined,
      deadAt: 0,
      heapIndex: -1,
    };
    this.jobs.set(id, job);
    this.counters.published += 1;
    const result: PublishResult =
      input.group === undefined
        ? { id, duplicate: false }
        : { id, duplicate: false, groupSeq: seq };
    if (job.traits?.group !== undefined && this.joinGroup(job)) return result;
    if (delay > 0) {
      job.state = 'delayed';
      this.delayed.push(job);
    } else {
      this.ready.pushBack(job);
    }
    this.watchExpiry(job);
    return result;
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
    if (this.expiries.size > 0) this.unwatchExpiry(job);
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
      payload: this.loaded(job.payload),
      deadline,
      deliveryCount: job.deliveryCount,
      redelivered: job.deliveryCount > 1,
      ...(job.traits?.group === undefined ? {} : { group: job.traits.group }),
    };
  }

  private ackOne(now: number, token: number): boolean {
    const delivery = this.active.get(token);
    if (delivery === undefined) {
      this.counters.staleAcks += 1;
      return false;
    }
    const job = this.endDelivery(delivery, now, 'acked', undefined);
    this.forget(job.id);
    if (job.traits?.group !== undefined) this.leaveGroup(job.traits.group, now);
    this.remember(job, now);
    const elapsed = now - delivery.deliveredAt;
    const timing = this.counters.processingTime;
    timing.count += 1;
    timing.sum += elapsed;
    if (elapsed > timing.max) timing.max = elapsed;
    this.counters.acks += 1;
    return true;
  }

  /** Nacks live deliveries given in token order, as one step. */
  private settleNacks(deliveries: DeliveryRecord[], now: number, nack: NackDisposition): void {
    const outcome = nack.requeue ? 'requeued' : 'rejected';
    const reason = nack.requeue ? undefined : nack.reason;
    const jobs = deliveries.map((delivery) =>
      nack.attempted
        ? this.endDelivery(delivery, now, outcome, reason, nack.error)
        : this.unworked(delivery),
    );
    this.counters.nacks += jobs.length;
    if (!nack.attempted) this.counters.unworked += jobs.length;
    if (nack.requeue) this.requeue(jobs, now, nack.delay, nack.attempted);
    else for (const job of jobs) this.deadLetter(job, now, nack.reason, nackKind(nack.reason));
  }

  /** Unlinks a live delivery from everything that indexes it; its token is then stale. */
  private unlinkDelivery(delivery: DeliveryRecord): JobRecord {
    const job = delivery.job;
    this.active.delete(delivery.token);
    this.deadlines.remove(delivery);
    if (delivery.ackTimer !== undefined) this.ackTimers.remove(delivery.ackTimer);
    delivery.session?.deliveries.delete(delivery.token);
    job.delivery = undefined;
    return job;
  }

  /**
   * R33: a delivery given back unworked is no delivery of its job: unlinked, no attempt
   * recorded, and the job's deliveryCount back to what it was before it.
   */
  private unworked(delivery: DeliveryRecord): JobRecord {
    const job = this.unlinkDelivery(delivery);
    job.deliveryCount -= 1;
    return job;
  }

  /** Ends a live delivery: unlinks it everywhere and records the attempt. */
  private endDelivery(
    delivery: DeliveryRecord,
    now: number,
    outcome: AttemptOutcome,
    reason: string | undefined,
    error?: string,
  ): JobRecord {
    const job = this.unlinkDelivery(delivery);
    // An acked job is gone (R8): nobody can read its history, so none is written.
    if (outcome === 'acked') return job;
    recordAttempt(job, {
      token: delivery.token,
      deliveredAt: delivery.deliveredAt,
      endedAt: now,
      outcome,
      ...(reason === undefined ? {} : { reason }),
      ...(error === undefined ? {} : { error }),
    });
    return job;
  }

  /**
   * Returns jobs (in token order) to ready: R13 dead-letters those out of deliveries (not those
   * given back unworked, R33); the rest go to the front in the same order, or to delayed when
   * `delay` > 0.
   */
  private requeue(jobs: JobRecord[], now: number, delay: number, attempted = true): void {
    const back: JobRecord[] = [];
    for (const job of jobs) {
      if (attempted && job.deliveryCount >= this.settings.maxDeliveries)
        this.deadLetter(job, now, 'max-deliveries', 'max-deliveries');
      else back.push(job);
    }
    if (delay > 0) {
      for (const job of back) {
        job.state = 'delayed';
        job.availableAt = now + delay;
        this.delayed.push(job);
        this.watchExpiry(job);
      }
      return;
    }
    for (let i = back.length - 1; i >= 0; i--) {
      const job = back[i] as JobRecord;
      job.state = 'ready';
      job.availableAt = now;
      this.ready.pushFront(job);
      this.watchExpiry(job);
    }
  }

  /**
   * R14: never silent; the job keeps its history in the dead set. R26: with a dead-letter
   * queue that takes it, it moves there instead, in this same step.
   */
  private deadLetter(
    job: JobRecord,
    now: number,
    reason: string,
    kind: DeadLetterKind,
    route = true,
  ): void {
    this.counters.deadLetters[kind] = (this.counters.deadLetters[kind] ?? 0) + 1;
    // Dead or moved on, the job leaves its group, which goes on (R24); a waiting job (cancelled)
    // has already left it.
    if (job.traits?.group !== undefined && job.state !== 'waiting') {
      this.leaveGroup(job.traits.group, now);
    }
    const target = this.settings.deadLetterQueue;
    if (route && target !== undefined && this.links !== undefined) {
      const origin: DeadLetterOrigin = { queue: this.name, reason, at: now };
      if (this.links.admit(target, now, { ...this.transferOf(job), origin })) {
        this.forget(job.id);
        return;
      }
    }
    job.state = 'dead';
    job.deadReason = reason;
    job.deadAt = now;
    this.dead.set(job.id, job);
    const seq = this.nextDeadSeq++;
    this.deadSeqs.set(job, seq);
    this.deadOrder.add(seq, job);
  }

  /** A dead job leaves the dead set (redriven, purged). */
  private leaveDead(job: JobRecord): void {
    this.dead.delete(job.id);
    this.deadOrder.shrink(this.dead.size);
  }

  // --- R24: message groups ------------------------------------------------------------------

  /**
   * Counts `job` into its group; true when an earlier member is there, so the job waits.
   */
  private joinGroup(job: JobRecord): boolean {
    const key = job.traits?.group as string;
    let group = this.groups.get(key);
    if (group === undefined) {
      group = { members: 0, waiting: undefined };
      this.groups.set(key, group);
    }
    group.members += 1;
    if (group.members === 1) return false;
    job.state = 'waiting';
    if (group.waiting === undefined) group.waiting = new Fifo();
    group.waiting.push(job);
    this.waitingOrder.add(job.traits?.groupSeq as number, job);
    this.waitingCount += 1;
    return true;
  }

  /**
   * The group's one member in play left it (acked, auto-acked, dead): the next one in group
   * order goes to the back of ready (of its priority), or to delayed while its delay lasts.
   */
  private leaveGroup(key: string, now: number): JobRecord | undefined {
    const group = this.groups.get(key) as GroupRecord;
    group.members -= 1;
    const next = group.waiting?.shift();
    if (next === undefined) {
      if (group.members === 0) this.groups.delete(key);
      return undefined;
    }
    this.waitingCount -= 1;
    if (next.availableAt > now) {
      next.state = 'delayed';
      this.delayed.push(next);
    } else {
      next.state = 'ready';
      next.availableAt = now;
      this.ready.pushBack(next);
    }
    this.waitingOrder.shrink(this.waitingCount);
    this.watchExpiry(next);
    return next;
  }

  // --- R30: expiry --------------------------------------------------------------------------

  /** A job became ready or delayed: it is watched if it expires (retention, its expiresAt). */
  private watchExpiry(job: JobRecord): void {
    const retention = this.settings.retention;
    const own = job.traits?.expiresAt;
    if (retention === undefined && own === undefined) return;
    const at = Math.min(
      own ?? Number.POSITIVE_INFINITY,
      retention === undefined ? Number.POSITIVE_INFINITY : job.publishedAt + retention,
    );
    const record: ExpiryRecord = { job, at, heapIndex: -1 };
    this.expiries.set(job, record);
    this.expiryHeap.push(record);
  }

  /** The job left ready and delayed (handed out, moved, cancelled, dead). */
  private unwatchExpiry(job: JobRecord): void {
    if (this.expiries.size === 0) return;
    const record = this.expiries.get(job);
    if (record === undefined) return;
    this.expiryHeap.remove(record);
    this.expiries.delete(job);
  }

  /** The retention changed: every ready and delayed job is watched anew. */
  private rewatchExpiries(): void {
    this.expiryHeap.clear();
    this.expiries.clear();
    for (const job of this.jobs.values()) {
      if (job.state === 'ready' || job.state === 'delayed') this.watchExpiry(job);
    }
  }

  // --- R31: maxLength -----------------------------------------------------------------------

  /**
   * A publish into a queue with a maxLength: with overflow `reject` it is refused whole (R5)
   * when it would leave more ready jobs than maxLength; with `dead-letter-oldest` it is taken,
   * then the oldest ready jobs die with reason `maxlen` until ready is back at maxLength.
   */
  private publishBounded(
    now: number,
    jobs: readonly PublishJob[],
    payloads: readonly unknown[] | undefined,
    maxLength: number,
  ): PublishResult[] {
    const before = this.ready.length;
    if (this.settings.overflow === undefined) {
      const added = this.readyAddedBy(jobs);
      if (added > 0 && before + added > maxLength) {
        this.counters.refused += jobs.length;
        throw new QueueFullError(
          `queue ${this.name || '(unnamed)'} is full: ${before} ready jobs, maxLength ${maxLength}; the publish would add ${added}`,
        );
      }
    }
    const given = givenGeneratedForm(jobs);
    const results = jobs.map((job, i) =>
      this.insert(now, job, payloads === undefined ? job.payload : payloads[i], given),
    );
    if (this.ready.length > before) {
      while (this.ready.length > maxLength) {
        const oldest = this.ready.shiftLowest() as JobRecord;
        this.unwatchExpiry(oldest);
        this.deadLetter(oldest, now, 'maxlen', 'maxlen');
      }
    }
    return results;
  }

  /**
   * How many jobs a publish would add to ready (R31): not the duplicates (R4), nor the
   * delayed ones, nor those that would wait behind an earlier member of their group (R24).
   */
  private readyAddedBy(jobs: readonly PublishJob[]): number {
    const ids = new Set<string>();
    const groups = new Set<string>();
    let added = 0;
    for (const job of jobs) {
      if (job.id !== undefined) {
        const taken = this.jobs.has(job.id) || this.rememberedId(job.id, this.clockValue);
        if (taken || ids.has(job.id)) continue;
        ids.add(job.id);
      }
      if (job.group !== undefined) {
        const waits = groups.has(job.group) || this.groups.has(job.group);
        groups.add(job.group);
        if (waits) continue;
      }
      if (job.delay === 0) added += 1;
    }
    return added;
  }

  /** A waiting member leaves its group (R28): the members in play are unchanged. */
  private dropWaiting(job: JobRecord): void {
    const key = job.traits?.group as string;
    const group = this.groups.get(key) as GroupRecord;
    (group.waiting as Fifo<JobRecord>).remove(job);
    // Removed for good, it would still read as waiting.
    this.waitingOrder.remove(job.traits?.groupSeq as number);
    group.members -= 1;
    this.waitingCount -= 1;
    this.waitingOrder.shrink(this.waitingCount);
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

  private upTo(sessionId: string, token: number): DeliveryRecord[] {
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

  /**
   * An acked id still remembered at `now` (R4): for the window in force when it was acked (a
   * window changed by updateQueue applies to later acks, as on the SQL engines).
   */
  private rememberedId(id: string, now: number): RememberedId | undefined {
    const remembered = this.remembered.get(id);
    return remembered !== undefined && remembered.forgetAt > now ? remembered : undefined;
  }

  /**
   * A fresh id: present nowhere in the queue, not remembered now (R4; an id whose window ended
   * is free, though it may wait in `remembered` behind one acked earlier), and none of the ids
   * the same publish gives (`given`), which its job later in line would find taken.
   */
  private generateId(given: ReadonlySet<string> | undefined): string {
    let id = generatedId(this.nextGeneratedId++);
    if (!this.generatedFormSeen && given === undefined) return id;
    while (
      this.jobs.has(id) ||
      this.rememberedId(id, this.clockValue) !== undefined ||
      given?.has(id) === true
    ) {
      id = generatedId(this.nextGeneratedId++);
    }
    return id;
  }

  private noteId(id: string): void {
    if (!this.generatedFormSeen && hasGeneratedForm(id)) this.generatedFormSeen = true;
  }
}

/**
 * The ids of the generated form (`job-N`) that a publish gives, when it also has jobs without
 * an id: the ids generated for those must not be ones a later job of the same publish brings
 * (it would be answered as a duplicate of a job it never was). Undefined otherwise.
 */
function givenGeneratedForm(jobs: readonly PublishJob[]): ReadonlySet<string> | undefined {
  if (jobs.length < 2) return undefined;
  if (!jobs.some((job) => job.id === undefined)) return undefined;
  const given = new Set<string>();
  for (const job of jobs) if (job.id !== undefined && hasGeneratedForm(job.id)) given.add(job.id);
  return given.size > 0 ? given : undefined;
}

/** An acked id remembered for the de-duplication window (R4). */
interface RememberedId {
  readonly id: string;
  readonly forgetAt: number;
  /** Its group sequence number (R29), when it had a group. */
  readonly groupSeq: number | undefined;
}

/** A job's group and group sequence number (R24, R29), when it has a group. */
function groupView(job: JobRecord): { group?: string; groupSeq?: number } {
  const traits = job.traits;
  return traits?.group === undefined ? {} : { group: traits.group, groupSeq: traits.groupSeq };
}

function liveDeliveryView(delivery: DeliveryRecord): LiveDelivery {
  return {
    token: delivery.token,
    id: delivery.job.id,
    deliveredAt: delivery.deliveredAt,
    deadline: delivery.deadline,
    deliveryCount: delivery.job.deliveryCount,
    ...(delivery.session === undefined ? {} : { session: delivery.session.id }),
  };
}

function originView(origin: DeadLetterOrigin | undefined): { origin?: DeadLetterOrigin } {
  return origin === undefined ? {} : { origin: { ...origin } };
}

/** The first `limit` of `items`, mapped: a cut view never visits the rest of a long list. */
function firstOf<T, U>(items: Iterable<T>, limit: number, map: (item: T) => U): U[] {
  const first: U[] = [];
  for (const item of items) {
    if (first.length >= limit) break;
    first.push(map(item));
  }
  return first;
}
