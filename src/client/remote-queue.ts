import {
  checkReceiveOnly,
  type Queue,
  type QueueLimits,
  RECEIVE_ONLY_OPTIONS,
  type ReceiveOptions,
  type ScheduleOptions,
  type ScheduleView,
  type ScheduleWhen,
} from '../broker/index.js';
import { leaseAge, noteLeaseAge } from '../broker/lease-age.js';
import { onAbort } from '../broker/on-abort.js';
import { checkScheduleName, scheduleRecord } from '../broker/schedule-times.js';
import {
  build,
  ClosedError,
  checkDeadLetterPage,
  checkDeliveryPage,
  checkedOperations,
  checkInspectOptions,
  checkLookedUpId,
  type DeadLetter,
  type DeadLetterPage,
  type DeadLetterPageOptions,
  type Delivery,
  type DeliveryPage,
  type DeliveryPageOptions,
  deadLetterCursor,
  deliveryCursor,
  encodeJobs,
  type InspectOptions,
  type InspectView,
  type JobView,
  type LiveDelivery,
  MAX_DEAD_LETTER_PAGE,
  MAX_DELIVERY_PAGE,
  type MoveJobsOptions,
  type NackOptions,
  type Operation,
  type OperationResults,
  type OperationType,
  type Outcome,
  type PublishInput,
  type PublishResult,
  type PurgeQueueResult,
  type QueueStats,
  type ResolvedQueueOptions,
  type ResultOf,
  SessionClosedError,
  type SessionOptions,
  ValidationError,
} from '../core/index.js';
import {
  boundsFromWire,
  deliveryFromWire,
  MAX_INSPECT_LIMIT,
  operationToWire,
  type WireDelivery,
  type WireOperation,
  type WireOutcome,
  type WireWrapper,
} from '../wire/index.js';
import type { Channel } from './channel.js';
import { errorFromWire, UnknownDeliveryError } from './errors.js';
import type { AnswerShape, HttpTransport } from './http.js';
import { checkPayloadsKept, inOwnPublish } from './payload-checks.js';
import { heldFor } from './prefetch.js';
import type { ReceiptBook } from './receipt-book.js';
import type { ServerLimitsReader } from './server-limits.js';

/**
 * A delivery with the receipt that settles it (what `receiveWithReceipts` returns); `P` as in
 * Delivery.
 */
export interface ReceivedDelivery<P = unknown> extends Delivery<P> {
  /** The delivery's receipt, which settles it from any process (`ackReceipts` and friends). */
  receipt: string;
}

/**
 * A queue on a leaseq server, implementing `Queue` exactly. Tokens are numbers here as
 * everywhere; this client keeps the receipt of every delivery it received and sends that, so
 * a settled delivery's token is answered by the server as stale (R8). A token it holds no
 * receipt for is refused with an UnknownDeliveryError. Operations travel as values (see
 * `execute`), coalesced per tick into one request. `P` is the type of its payloads, the
 * caller's claim (see Queue): what the server answers is not checked against it.
 */
export class RemoteQueue<P = unknown> implements Queue<P> {
  private readonly path: string;
  private readonly wrapper: WireWrapper;

  constructor(
    readonly name: string,
    private readonly http: HttpTransport,
    private readonly channel: Channel,
    private readonly book: ReceiptBook,
    private readonly serverLimits: ServerLimitsReader,
    /** Aborted as the client's close begins (see `watchClose`); absent, nothing is told. */
    private readonly clientClosing?: AbortSignal,
  ) {
    this.path = `/v1/queues/${encodeURIComponent(name)}`;
    this.wrapper = {
      receipt: (token) => {
        const receipt = this.book.receipt(token);
        if (receipt === undefined) throw new UnknownDeliveryError(token);
        return receipt;
      },
      // Over HTTP the session id a caller holds is the server's handle.
      sessionHandle: (sessionId) => sessionId,
    };
  }

  /**
   * true once this client's close began (`RemoteBroker.close`, which may still be giving back
   * held deliveries); a server's CLOSED leaves it false.
   */
  get closed(): boolean {
    return this.channel.closing || this.http.closed;
  }

  /** Calls `listener` once when this client's close begins (Queue.watchClose). */
  watchClose(listener: (cause: Error) => void): () => void {
    const closing = this.clientClosing;
    if (closing === undefined || closing.aborted) return () => {};
    return onAbort(closing, () => listener(new ClosedError('the client is closed')));
  }

  async options(): Promise<ResolvedQueueOptions> {
    const view = await this.get<{ options: ResolvedQueueOptions }>('', { options: 'object' });
    return boundsFromWire(view.options);
  }

  /**
   * The server's longest delay and lease, and largest batch and request (`GET /v1/limits`): it
   * refuses more.
   */
  async limits(): Promise<Required<QueueLimits>> {
    const { maxDelayMs, maxVisibilityMs, maxBatch, maxBodyBytes } = await this.serverLimits.read();
    return { maxDelayMs, maxVisibilityMs, maxBatch, maxBodyBytes };
  }

  async receive(options: ReceiveOptions = {}): Promise<Delivery<P>[]> {
    const received = await this.receiveWithReceipts(options);
    return received.map((withReceipt) => {
      const { receipt: _receipt, ...delivery } = withReceipt;
      noteLeaseAge(delivery, leaseAge(withReceipt));
      return delivery;
    });
  }

  /**
   * `receive`, with each delivery's receipt: for handing a delivery to another process, which
   * can settle it with `ackReceipt` and friends.
   */
  async receiveWithReceipts(options: ReceiveOptions = {}): Promise<ReceivedDelivery<P>[]> {
    build.reserve(options, RECEIVE_ONLY_OPTIONS);
    const { wait = 0, signal, max, visibility, session, ack } = options;
    checkReceiveOnly(wait, signal);
    let deliveries: WireDelivery[];
    try {
      deliveries = await this.channel.receive(this.name, {
        max,
        visibility,
        session,
        ack,
        wait,
        signal,
      });
    } catch (error) {
      // The server names the session by its own id; the caller knows it by its handle.
      if (error instanceof SessionClosedError && session !== undefined) {
        this.book.settleSession(session);
        throw new SessionClosedError(session);
      }
      throw error;
    }
    return deliveries.map((wire) => {
      const delivery = this.remember(wire, session);
      // The server's part (a reservation answered late there) and the time held here.
      noteLeaseAge(delivery, (wire.leaseAge ?? 0) + heldFor(wire));
      return delivery;
    });
  }

  /**
   * Executes operations on the server, in one request with the other operations this process
   * submits in the same tick. Tokens travel as the receipts this client holds for them.
   */
  async execute(operations: readonly Operation[]): Promise<Outcome[]> {
    const checked = checkedOperations(operations);
    const outcomes: Outcome[] = new Array(checked.length);
    const sent: { index: number; operation: Operation; wire: WireOperation }[] = [];
    checked.forEach((operation, index) => {
      if (operation instanceof ValidationError) {
        outcomes[index] = { ok: false, error: operation };
        return;
      }
      try {
        // A payload that is not JSON is refused here, as an engine refuses it, not whole; so is
        // one the server would refuse the whole request for, with the calls sent with it.
        if (operation.type === 'publish') {
          encodeJobs(operation.jobs);
          checkPayloadsKept(operation.jobs);
        }
        sent.push({ index, operation, wire: operationToWire(operation, this.wrapper) });
      } catch (error) {
        if (!(error instanceof UnknownDeliveryError || error instanceof ValidationError))
          throw error;
        outcomes[index] = { ok: false, error };
      }
    });
    if (sent.length === 0) return outcomes;
    const answers = await this.channel.execute(
      this.name,
      sent.map((entry) => entry.wire),
      // Several operations are one unit (R20): one batch, never split. One alone may be split
      // into entries as its own call would be (an ack of more receipts than maxBatch).
      sent.length > 1,
    );
    sent.forEach(({ index, operation }, k) => {
      outcomes[index] = this.fromWire(operation, answers[k] as WireOutcome);
    });
    return outcomes;
  }

  async publish(input: PublishInput<P> = {}): Promise<PublishResult> {
    return (await this.run(build.publish(input)))[0] as PublishResult;
  }

  async publishBatch(inputs: readonly PublishInput<P>[]): Promise<PublishResult[]> {
    return this.run(build.publishBatch(inputs));
  }

  async ack(token: number): Promise<boolean> {
    return (await this.run(build.ack(token)))[0] as boolean;
  }

  async ackMany(tokens: readonly number[]): Promise<boolean[]> {
    return this.run(build.ackMany(tokens));
  }

  async nack(token: number, options?: NackOptions): Promise<boolean> {
    return this.run(build.nack(token, options));
  }

  reject(token: number, options?: NackOptions): Promise<boolean> {
    return this.nack(token, options);
  }

  async extend(token: number, visibility: number): Promise<number | null> {
    return this.run(build.extend(token, visibility));
  }

  async openSession(options?: SessionOptions): Promise<string> {
    return this.run(build.openSession(options));
  }

  async heartbeat(sessionId: string): Promise<void> {
    await this.run(build.heartbeat(sessionId));
  }

  async closeSession(sessionId: string): Promise<number> {
    // The receipts stay: a late ack of a released delivery is answered stale (R8), not unknown.
    return this.run(build.closeSession(sessionId));
  }

  async ackUpTo(sessionId: string, token: number): Promise<number> {
    return this.run(build.ackUpTo(sessionId, token));
  }

  async nackUpTo(sessionId: string, token: number, options?: NackOptions): Promise<number> {
    return this.run(build.nackUpTo(sessionId, token, options));
  }

  async redrive(ids?: readonly string[]): Promise<number> {
    return this.run(build.redrive(ids));
  }

  async purge(ids?: readonly string[]): Promise<number> {
    return this.run(build.purge(ids));
  }

  async purgeQueue(options?: {
    /** true: the dead jobs are removed too. Default false. */
    dead?: boolean;
  }): Promise<PurgeQueueResult> {
    return this.run(build.purgeQueue(options));
  }

  async moveJobs(options?: MoveJobsOptions): Promise<number> {
    return this.run(build.moveJobs(options));
  }

  async cancel(
    id: string,
    options?: {
      /** true: the job is removed rather than dead with reason `cancelled`. Default false. */
      remove?: boolean;
    },
  ): Promise<boolean> {
    return this.run(build.cancel(id, options));
  }

  async stats(): Promise<QueueStats> {
    return this.run(build.stats());
  }

  /**
   * The receipt of a delivery this client received, settled or not, while it is kept (see
   * RemoteOptions.maxReceipts).
   */
  receiptOf(token: number): string | undefined {
    return this.book.receipt(token);
  }

  /** Acks deliveries by receipt (from any process); one result per receipt. */
  async ackReceipts(receipts: readonly string[]): Promise<boolean[]> {
    return (await this.runWire({ type: 'ack', receipts: [...receipts] })) as boolean[];
  }

  /** `nack` (R9) of a delivery by receipt (from any process); false when it is stale. */
  async nackReceipt(receipt: string, options: NackOptions = {}): Promise<boolean> {
    // Checked and sent as `nack` is: a misspelt option refused (never dropped, which would
    // requeue a job meant for the dead letters), and `attempted` only when false.
    const nack = operationToWire(build.nack(1, options), {
      ...this.wrapper,
      receipt: () => receipt,
    });
    return (await this.runWire(nack)) as boolean;
  }

  /**
   * `extend` (R10) of a delivery by receipt (from any process): the new deadline (ms), or null
   * when it is stale.
   */
  async extendReceipt(receipt: string, visibility: number): Promise<number | null> {
    return (await this.runWire({ type: 'extend', receipt, visibility })) as number | null;
  }

  /** Every dead letter, page after page of the most the server answers with at once. */
  async deadLetters(): Promise<DeadLetter<P>[]> {
    return everyPage(async (after) => {
      const page = await this.deadLetterPage({ limit: MAX_DEAD_LETTER_PAGE, ...after });
      return { entries: page.deadLetters, next: page.next };
    });
  }

  async deadLetterPage(options?: DeadLetterPageOptions): Promise<DeadLetterPage<P>> {
    // Checked here too: a bad value is said as the library says it, not as a query string.
    const { limit, after, payloads } = checkDeadLetterPage(options);
    const query = new URLSearchParams({ limit: String(limit) });
    if (after > 0) query.set('after', deadLetterCursor(after));
    if (!payloads) query.set('payload', 'false');
    return this.get<DeadLetterPage<P>>(`/dead-letters?${query}`, { deadLetters: 'array' });
  }

  /** With `limit`, the server's storage reads only the first `limit` of each list. */
  async inspect(options?: InspectOptions): Promise<InspectView> {
    // Checked here too: a bad value is said as the library says it, not as a query string.
    const limit = checkInspectOptions(options);
    if (limit === undefined) return this.get('/inspect', INSPECT_VIEW);
    if (limit <= MAX_INSPECT_LIMIT) return this.get(`/inspect?limit=${limit}`, INSPECT_VIEW);
    // More than one answer of the route holds: the whole view, cut here (as in-process).
    return firstOfEach(await this.get<InspectView>('/inspect', INSPECT_VIEW), limit);
  }

  /** Every live delivery, page after page of the most the server answers with at once. */
  async deliveries(): Promise<LiveDelivery[]> {
    return everyPage(async (after) => {
      const page = await this.deliveryPage({ limit: MAX_DELIVERY_PAGE, ...after });
      return { entries: page.deliveries, next: page.next };
    });
  }

  async deliveryPage(options?: DeliveryPageOptions): Promise<DeliveryPage> {
    // Checked here too: a bad value is said as the library says it, not as a query string.
    const { limit, after } = checkDeliveryPage(options);
    const query = new URLSearchParams({ limit: String(limit) });
    if (after > 0) query.set('after', deliveryCursor(after));
    return this.get<DeliveryPage>(`/deliveries?${query}`, { deliveries: 'array' });
  }

  /**
   * One job, or undefined. The ids `.` and `..` cannot be one URL path segment (URLs resolve
   * them), so they are refused here.
   */
  async job(id: string): Promise<JobView<P> | undefined> {
    if (id === '.' || id === '..') {
      throw new ValidationError('the job ids "." and ".." cannot be looked up over HTTP');
    }
    checkLookedUpId(id);
    try {
      return await this.get<JobView<P>>(`/jobs/${encodeURIComponent(id)}`, { id: 'string' });
    } catch (error) {
      if ((error as { code?: string }).code !== 'NOT_FOUND') throw error;
      // No such job, or no such queue: the second is NOT_FOUND, as in-process, not "no job".
      await this.options();
      return undefined;
    }
  }

  /** R25: sets the periodic job `name` of this queue on the server (see Queue.schedule). */
  async schedule(name: string, when: ScheduleWhen, options: ScheduleOptions<P> = {}) {
    // Refused here as in-process, in the same words (the server checks again, with its limits).
    scheduleRecord(this.name, name, when, options, Date.now());
    const body = { ...options, ...(typeof when === 'number' ? { every: when } : { cron: when }) };
    return this.http.request<ScheduleView<P>>('PUT', this.schedulePath(name), {
      body,
      answer: { name: 'string' },
    });
  }

  async schedules(): Promise<ScheduleView<P>[]> {
    return (await this.get<{ schedules: ScheduleView<P>[] }>('/schedules', { schedules: 'array' }))
      .schedules;
  }

  async removeSchedule(name: string): Promise<boolean> {
    const path = this.schedulePath(name);
    const answer = await this.http.request<{ removed: boolean }>('DELETE', path, {
      answer: { removed: 'boolean' },
    });
    return answer.removed;
  }

  private schedulePath(name: string): string {
    checkScheduleName(name);
    return `${this.path}/schedules/${encodeURIComponent(name)}`;
  }

  private remember(wire: WireDelivery, session: string | undefined): ReceivedDelivery<P> {
    this.book.add(wire.token, wire.receipt, session);
    // The payload as the server sent it: of type P by the caller's word alone (see Queue).
    return { ...(deliveryFromWire(wire) as Delivery<P>), receipt: wire.receipt };
  }

  /**
   * One operation as the wire carries it (by receipt), on the channel with the others: over
   * the stream, a settle by receipt gives the subscription's credit back like one by token.
   */
  private async runWire(operation: WireOperation): Promise<unknown> {
    const [answer] = await this.channel.execute(this.name, [operation]);
    if (answer === undefined) throw new Error('the server answered no outcome');
    if (!answer.ok) throw errorFromWire(answer.error);
    return answer.value;
  }

  /** One operation; its error, if any, is thrown. */
  private async run<O extends Operation>(operation: O): Promise<ResultOf<O>> {
    const [outcome] = await this.execute([operation]);
    if (outcome === undefined) throw new Error('the server answered no outcome');
    if (!outcome.ok) throw outcome.error;
    return outcome.value as ResultOf<O>;
  }

  private fromWire(operation: Operation, outcome: WireOutcome): Outcome {
    if (!outcome.ok) {
      const error = errorFromWire(
        operation.type === 'publish'
          ? inOwnPublish(outcome.error, operation.jobs.length)
          : outcome.error,
      );
      // The server names the session by its own id; the caller knows it by its handle.
      const session = 'session' in operation ? operation.session : undefined;
      if (error instanceof SessionClosedError && typeof session === 'string') {
        this.book.settleSession(session);
        return { ok: false, error: new SessionClosedError(session) };
      }
      return { ok: false, error };
    }
    if (operation.type === 'reserve') {
      const deliveries = (outcome.value as WireDelivery[]).map((wire) =>
        deliveryFromWire(this.remember(wire, operation.session)),
      );
      return { ok: true, value: deliveries };
    }
    // A delivery settled (or found gone) gives up its place in the book before one in hand.
    if (operation.type === 'ack') {
      for (const token of operation.tokens) this.book.settle(token);
    } else if (
      operation.type === 'nack' ||
      (operation.type === 'extend' && outcome.value === null)
    ) {
      this.book.settle(operation.token);
    } else if (operation.type === 'ackUpTo' || operation.type === 'nackUpTo') {
      this.book.settleUpTo(operation.session, operation.token);
    } else if (operation.type === 'closeSession') {
      this.book.settleSession(operation.session);
    }
    return { ok: true, value: outcome.value as OperationResults[OperationType] };
  }

  /** A GET of this queue's `suffix`, whose answer has the fields of `answer`. */
  private get<T>(suffix: string, answer: AnswerShape): Promise<T> {
    return this.http.request<T>('GET', `${this.path}${suffix}`, { answer });
  }
}

/** What a leaseq server's inspect answer has: the lists of each state. */
const INSPECT_VIEW: AnswerShape = {
  ready: 'array',
  delayed: 'array',
  active: 'array',
  dead: 'array',
};

/** The first `limit` entries of each list of `view`. */
function firstOfEach(view: InspectView, limit: number): InspectView {
  const { waiting, ...rest } = view;
  return {
    ...rest,
    ready: view.ready.slice(0, limit),
    delayed: view.delayed.slice(0, limit),
    active: view.active.slice(0, limit),
    dead: view.dead.slice(0, limit),
    ...(waiting === undefined ? {} : { waiting: waiting.slice(0, limit) }),
  };
}

/**
 * Every entry of a paged list: page after page, each read after the cursor (`{ after }`, none
 * for the first) of the one before, until a page has no `next`.
 */
async function everyPage<T>(
  read: (after: { after?: string }) => Promise<{ entries: T[]; next?: string | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  let after: string | undefined;
  do {
    const page = await read(after === undefined ? {} : { after });
    for (const entry of page.entries) all.push(entry);
    after = page.next;
  } while (after !== undefined);
  return all;
}
