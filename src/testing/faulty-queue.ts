import type { Queue, ReceiveOptions } from '../broker/queue.js';
import type { ScheduleOptions, ScheduleWhen } from '../broker/schedule-times.js';
import { addUnknownOptions } from '../core/errors.js';
import type {
  DeadLetterPageOptions,
  DeliveryPageOptions,
  InspectOptions,
  MoveJobsOptions,
  NackOptions,
  Operation,
  PublishInput,
  SessionOptions,
} from '../core/index.js';
import { SessionClosedError, ValidationError } from '../core/index.js';
import { show } from '../core/validate.js';
import { InjectedFaultError, ProcessCrashedError } from './errors.js';

/** One call that went through a FaultyQueue, and what the fault plan did with it. */
export interface FaultyCall {
  /** 'ack' (an entry per token of an ackMany), 'nack', 'reject', 'extend' or 'receive'. */
  op: string;
  /** The delivery's token; absent for a receive. */
  token?: number;
  /**
   * 'sent': reached the queue. 'dropped': never reached it. 'answer-lost': reached it, the
   * answer did not come back. 'refused': an extend a renewal fault failed, never sent. 'hung':
   * an extend held until `heal()`, which sends it (logged again then, as 'sent').
   */
  fate: 'sent' | 'dropped' | 'answer-lost' | 'refused' | 'hung';
  /** receive: the most deliveries asked for. */
  max?: number;
  /** What the queue answered, when it got the call; for a receive, the tokens delivered. */
  result?: unknown;
}

/** Options of `FaultyQueue.failRenewals`. */
export interface FailRenewalsOptions {
  /**
   * 'refused' (default): extend answers null, as for a lease that is gone. 'error': it throws.
   * 'hang': no answer comes (a half-open connection) until `heal()`, which then sends it.
   * 'late': the queue gets it at once, but its answer waits until `heal()` (an answer that
   * came in while the process's event loop was blocked, read after its timers ran).
   */
  mode?: 'refused' | 'error' | 'hang' | 'late';
  /** How many extends fail. Default Infinity (until `heal()`). */
  count?: number;
}

/**
 * A Queue that passes calls to a real one, except where a fault was armed: lost acks, a crash
 * before the ack, failing renewals, a session closed under the consumer. Give it to the
 * worker under test; keep the real queue for the test's own checks. `P` is the real queue's
 * payload type.
 */
export class FaultyQueue<P = unknown> implements Queue<P> {
  /** Every settle, extend and receive call, in order. */
  readonly calls: FaultyCall[] = [];
  private crashArmed = false;
  private lostAcks: { applied: boolean }[] = [];
  private renewalFaults: { mode: FailRenewalsOptions['mode']; left: number } = {
    mode: 'refused',
    left: 0,
  };
  /** Hung extends and heartbeats, each sent (and so answered) when healed; late ones answered. */
  private hung: (() => void)[] = [];
  private heartbeatFaults: { mode: 'error' | 'hang' | 'late'; left: number } = {
    mode: 'error',
    left: 0,
  };
  private readonly sessions = new Set<string>();
  private isCrashed = false;

  constructor(
    private readonly inner: Queue<P>,
    private readonly onCrash: () => void = () => {},
  ) {}

  get name(): string {
    return this.inner.name;
  }

  /**
   * The real queue's (Queue.closed): a worker under test ends when its broker is closed. A
   * crashed process hears nothing: false once it crashed, so its worker does not close.
   */
  get closed(): boolean | undefined {
    return this.isCrashed ? false : this.inner.closed;
  }

  /**
   * The real queue's (Queue.watchClose): a worker with every slot taken learns of the close.
   * Not told once the process crashed: a dead process neither logs nor closes.
   */
  watchClose(listener: (cause: Error) => void): () => void {
    return (
      this.inner.watchClose?.((cause) => {
        if (!this.isCrashed) listener(cause);
      }) ?? (() => {})
    );
  }

  /** true once the process died: `crash()`, or an ack or nack after `crashBeforeAck()`. */
  get crashed(): boolean {
    return this.isCrashed;
  }

  /** The next ack or nack is never sent: the process dies right before it (see `crash`). */
  crashBeforeAck(): void {
    this.crashArmed = true;
  }

  /**
   * The next ack is lost: never sent (default), or with `applied: true` applied by the queue
   * but its answer lost. Either way the caller sees an InjectedFaultError.
   */
  loseNextAck(
    options: {
      /** true: the queue applies the ack, and only its answer is lost. Default false. */
      applied?: boolean;
    } = {},
  ): void {
    checkFault('loseNextAck', options);
    this.lostAcks.push({ applied: options.applied ?? false });
  }

  /** Makes extends fail: refused (null), throwing or hung, `count` times or until `heal()`. */
  failRenewals(options: FailRenewalsOptions = {}): void {
    checkFault('failRenewals', options, ['refused', 'error', 'hang', 'late']);
    this.renewalFaults = {
      mode: options.mode ?? 'refused',
      left: options.count ?? Number.POSITIVE_INFINITY,
    };
  }

  /**
   * Makes heartbeats fail, as when the server is out of reach: throwing ('error', default) or
   * with no answer until `heal()` ('hang'), `count` times or until `heal()`. The session itself
   * is left alone: it ends on the queue once its timeout passes without a heartbeat (R16).
   * 'late': the queue hears it at once, its answer waits until `heal()`.
   */
  failHeartbeats(
    options: {
      /** How they fail: 'error' (default), 'hang' or 'late', as above. */
      mode?: 'error' | 'hang' | 'late';
      /** How many heartbeats fail. Default Infinity (until `heal()`). */
      count?: number;
    } = {},
  ): void {
    checkFault('failHeartbeats', options, ['error', 'hang', 'late']);
    this.heartbeatFaults = {
      mode: options.mode ?? 'error',
      left: options.count ?? Number.POSITIVE_INFINITY,
    };
  }

  /**
   * Ends every session opened through this queue, as a missed heartbeat would (R16): their
   * deliveries are released at once and their tokens become stale. Returns how many it ended;
   * one that had ended already (its timeout, a close elsewhere) is skipped, not counted.
   */
  async endSessions(): Promise<number> {
    let ended = 0;
    for (const id of [...this.sessions]) {
      try {
        await this.inner.closeSession(id);
        ended += 1;
      } catch (error) {
        if (!(error instanceof SessionClosedError)) throw error;
      }
      this.sessions.delete(id);
    }
    return ended;
  }

  /** The process dies: from now on every call is refused with a ProcessCrashedError. */
  crash(): void {
    if (this.isCrashed) return;
    this.isCrashed = true;
    this.onCrash();
  }

  /** Disarms every fault not yet triggered (a crash stays); hung calls are sent now, late ones answered. */
  heal(): void {
    this.crashArmed = false;
    this.lostAcks = [];
    this.renewalFaults = { mode: 'refused', left: 0 };
    this.heartbeatFaults = { mode: 'error', left: 0 };
    const hung = this.hung;
    this.hung = [];
    for (const send of hung) send();
  }

  options() {
    return this.pass(() => this.inner.options());
  }

  /** Passed through as it is: the faults are armed on the friendly methods. */
  execute(operations: readonly Operation[]) {
    return this.pass(() => this.inner.execute(operations));
  }

  publish(input?: PublishInput<P>) {
    return this.pass(() => this.inner.publish(input));
  }

  publishBatch(inputs: readonly PublishInput<P>[]) {
    return this.pass(() => this.inner.publishBatch(inputs));
  }

  /** Logged when asked (with `max`); its `result`, the tokens, is filled in when it returns. */
  async receive(options?: ReceiveOptions) {
    if (this.isCrashed) return this.pass(() => this.inner.receive(options));
    const call: FaultyCall = { op: 'receive', fate: 'sent', max: options?.max ?? 1 };
    this.calls.push(call);
    const deliveries = await this.inner.receive(options);
    call.result = deliveries.map((delivery) => delivery.token);
    return deliveries;
  }

  async ack(token: number): Promise<boolean> {
    if (this.crashArmed) return this.crashAt('ack', token);
    const lost = this.lostAcks.shift();
    if (lost !== undefined) {
      const result = lost.applied ? await this.pass(() => this.inner.ack(token)) : undefined;
      this.calls.push({ op: 'ack', token, fate: lost.applied ? 'answer-lost' : 'dropped', result });
      throw new InjectedFaultError(`ack of token ${token} lost`);
    }
    return this.sent('ack', token, () => this.inner.ack(token));
  }

  /** The faults of `ack` apply to a batch of acks as a whole: it is one request. */
  async ackMany(tokens: readonly number[]): Promise<boolean[]> {
    if (this.crashArmed) {
      for (const token of tokens.slice(1)) this.calls.push({ op: 'ack', token, fate: 'dropped' });
      return this.crashAt('ack', tokens[0] as number);
    }
    const lost = this.lostAcks.shift();
    if (lost !== undefined) {
      const results = lost.applied ? await this.pass(() => this.inner.ackMany(tokens)) : undefined;
      tokens.forEach((token, index) => {
        const fate = lost.applied ? 'answer-lost' : 'dropped';
        this.calls.push({ op: 'ack', token, fate, result: results?.[index] });
      });
      throw new InjectedFaultError(`ack of tokens ${tokens.join(', ')} lost`);
    }
    const results = await this.pass(() => this.inner.ackMany(tokens));
    tokens.forEach((token, index) => {
      this.calls.push({ op: 'ack', token, fate: 'sent', result: results[index] });
    });
    return results;
  }

  nack(token: number, options?: NackOptions): Promise<boolean> {
    if (this.crashArmed) return this.crashAt('nack', token);
    return this.sent('nack', token, () => this.inner.nack(token, options));
  }

  reject(token: number, options?: NackOptions): Promise<boolean> {
    if (this.crashArmed) return this.crashAt('reject', token);
    return this.sent('reject', token, () => this.inner.reject(token, options));
  }

  async extend(token: number, visibility: number): Promise<number | null> {
    if (!this.isCrashed && this.renewalFaults.left > 0) {
      this.renewalFaults.left -= 1;
      if (this.renewalFaults.mode === 'late') {
        return this.answerLate(
          this.sent('extend', token, () => this.inner.extend(token, visibility)),
        );
      }
      if (this.renewalFaults.mode === 'hang') {
        this.calls.push({ op: 'extend', token, fate: 'hung' });
        return new Promise((resolve, reject) => {
          this.hung.push(() => {
            this.sent('extend', token, () => this.inner.extend(token, visibility)).then(
              resolve,
              reject,
            );
          });
        });
      }
      this.calls.push({ op: 'extend', token, fate: 'refused' });
      if (this.renewalFaults.mode === 'refused') return null;
      throw new InjectedFaultError(`extend of token ${token} failed`);
    }
    return this.sent('extend', token, () => this.inner.extend(token, visibility));
  }

  async openSession(options?: SessionOptions) {
    const id = await this.pass(() => this.inner.openSession(options));
    this.sessions.add(id);
    return id;
  }

  async heartbeat(sessionId: string): Promise<void> {
    if (!this.isCrashed && this.heartbeatFaults.left > 0) {
      this.heartbeatFaults.left -= 1;
      if (this.heartbeatFaults.mode === 'late') {
        return this.answerLate(this.pass(() => this.inner.heartbeat(sessionId)));
      }
      if (this.heartbeatFaults.mode === 'hang') {
        return new Promise((resolve, reject) => {
          this.hung.push(() => {
            this.pass(() => this.inner.heartbeat(sessionId)).then(resolve, reject);
          });
        });
      }
      throw new InjectedFaultError(`heartbeat of session ${sessionId} failed`);
    }
    return this.pass(() => this.inner.heartbeat(sessionId));
  }

  closeSession(sessionId: string) {
    this.sessions.delete(sessionId);
    return this.pass(() => this.inner.closeSession(sessionId));
  }

  ackUpTo(sessionId: string, token: number) {
    return this.pass(() => this.inner.ackUpTo(sessionId, token));
  }

  nackUpTo(sessionId: string, token: number, options?: NackOptions) {
    return this.pass(() => this.inner.nackUpTo(sessionId, token, options));
  }

  deadLetters() {
    return this.pass(() => this.inner.deadLetters());
  }

  deadLetterPage(options?: DeadLetterPageOptions) {
    return this.pass(() => this.inner.deadLetterPage(options));
  }

  redrive(ids?: readonly string[]) {
    return this.pass(() => this.inner.redrive(ids));
  }

  purge(ids?: readonly string[]) {
    return this.pass(() => this.inner.purge(ids));
  }

  purgeQueue(options?: {
    /** true: the dead jobs are removed too. Default false. */
    dead?: boolean;
  }) {
    return this.pass(() => this.inner.purgeQueue(options));
  }

  moveJobs(options?: MoveJobsOptions) {
    return this.pass(() => this.inner.moveJobs(options));
  }

  cancel(
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ) {
    return this.pass(() => this.inner.cancel(id, options));
  }

  stats() {
    return this.pass(() => this.inner.stats());
  }

  inspect(options?: InspectOptions) {
    return this.pass(() => this.inner.inspect(options));
  }

  deliveries() {
    return this.pass(() => this.inner.deliveries());
  }

  deliveryPage(options?: DeliveryPageOptions) {
    return this.pass(() => this.inner.deliveryPage(options));
  }

  job(id: string) {
    return this.pass(() => this.inner.job(id));
  }

  schedule(name: string, when: ScheduleWhen, options?: ScheduleOptions<P>) {
    return this.pass(() => this.inner.schedule(name, when, options));
  }

  schedules() {
    return this.pass(() => this.inner.schedules());
  }

  removeSchedule(name: string) {
    return this.pass(() => this.inner.removeSchedule(name));
  }

  private async sent<T>(op: string, token: number, call: () => Promise<T>): Promise<T> {
    const result = await this.pass(call);
    this.calls.push({ op, token, fate: 'sent', result });
    return result;
  }

  private async crashAt(op: string, token: number): Promise<never> {
    this.crashArmed = false;
    this.calls.push({ op, token, fate: 'dropped' });
    this.crash();
    throw new ProcessCrashedError(`process crashed before its ${op} of token ${token}`);
  }

  /** The answer of a call the queue already got, held until `heal()`. */
  private answerLate<T>(answer: Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.hung.push(() => answer.then(resolve, reject));
    });
  }

  private async pass<T>(call: () => Promise<T>): Promise<T> {
    if (this.isCrashed) throw new ProcessCrashedError('process crashed: no more calls');
    return call();
  }
}

/**
 * The options of a fault, refused before it is armed: a misspelt mode or a count that is not a
 * number would otherwise arm another fault, or none, and the test would prove nothing.
 */
function checkFault(method: string, options: unknown, modes?: readonly string[]): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`${method}: options must be an object, got ${show(options)}`);
  }
  // With modes, a fault takes `mode` and `count`; without, `applied` (a lost ack).
  const names = modes === undefined ? ['applied'] : ['mode', 'count'];
  const issues: string[] = [];
  addUnknownOptions(issues, Object.keys(options), (name) => names.includes(name));
  const { mode, count, applied } = options as Record<string, unknown>;
  if (modes === undefined) {
    if (applied !== undefined && typeof applied !== 'boolean') {
      issues.push(`applied must be a boolean, got ${show(applied)}`);
    }
  } else {
    if (mode !== undefined && !modes.includes(mode as string)) {
      const allowed = modes.map((known) => `'${known}'`).join(', ');
      issues.push(`mode must be one of ${allowed}, got ${show(mode)}`);
    }
    const countValid =
      count === undefined ||
      count === Number.POSITIVE_INFINITY ||
      (Number.isSafeInteger(count) && (count as number) > 0);
    if (!countValid)
      issues.push(`count must be a positive integer or Infinity, got ${show(count)}`);
  }
  if (issues.length > 0) throw new ValidationError(issues.map((i) => `${method}: ${i}`));
}
