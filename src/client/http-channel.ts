import { onAbort, untilAborted } from '../broker/on-abort.js';
import { build, ClosedError, StorageUnavailableError, ValidationError } from '../core/index.js';
import {
  operationToWire,
  type WireDelivery,
  type WireOperation,
  type WireOutcome,
} from '../wire/index.js';
import type { Channel, ChannelReceive } from './channel.js';
import { ConnectionLostError, errorFromWire, RemoteError } from './errors.js';
import { type HttpTransport, RequestAborted } from './http.js';
import { BATCH_ENVELOPE_BYTES, OperationBatcher } from './operation-batcher.js';
import { withoutTooDeep } from './payload-checks.js';
import type { ServerLimits, ServerLimitsReader } from './server-limits.js';

/**
 * The shortest a long poll and the pause after it last, together: a server that holds no
 * receive (its maxWaitMs is 0) answers at once, and polled again at once it would take
 * thousands of requests a second from one waiting receive.
 */
const MIN_POLL_MS = 100;

/**
 * The longest the close waits for the server, a healthy one answering at once: for the answers
 * of the long polls it ended, to give back the jobs they carry, then for its closes of the
 * sessions left open.
 */
const CLOSE_WAIT_MS = 2000;

/**
 * Refusals of a closeSession that say the server could not do it now: the session may still be
 * open there. Any other answer (closed, or SESSION_CLOSED, NOT_FOUND: it already was, or its
 * queue is gone) means it has ended.
 */
const NOT_CLOSED = new Set([
  'STORAGE_UNAVAILABLE',
  'STORAGE_LOCKED',
  'CLOSED',
  'TOO_MANY_REQUESTS',
]);

/** The body of one long poll: a receive's reserve and the wait it asks for. */
type WireOperationBody = Omit<ChannelReceive, 'wait' | 'signal'> & { wait: number };

export interface HttpChannelSettings {
  /** The longest wait one receive request carries, at most; the server's maxWaitMs when lower. */
  maxWaitPerRequestMs: number | undefined;
  /** Most entries one batch request carries, at most; the server's maxBatch when lower. */
  maxBatch: number | undefined;
}

/** Operations as `POST /v1/queues/{name}/operations`, receives as long polls. */
export class HttpChannel implements Channel {
  private readonly batcher: OperationBatcher;
  /** The server's limits as lowered here, once known. */
  private loweredLimits: Promise<ServerLimits> | undefined;

  constructor(
    private readonly http: HttpTransport,
    private readonly settings: HttpChannelSettings,
    private readonly limits: ServerLimitsReader,
  ) {
    this.batcher = new OperationBatcher({
      send: async (queue, operations) =>
        (
          await this.http
            .request<{ results: WireOutcome[] }>('POST', `${queuePath(queue)}/operations`, {
              body: { operations },
              answer: { results: 'array' },
              // An outcome per operation, as a leaseq server answers (another API's `results`
              // list is not taken for one).
              accepts: (answer) => isOutcomeList(answer.results, operations.length),
            })
            .catch((error: unknown) => this.failed(error))
        ).results,
      limits: async () => {
        const { maxBatch, maxBodyBytes } = await this.serverLimits();
        // Lowered to the option (see lowered): a refusal names the option, not the server.
        const maxBatchIsOption = this.settings.maxBatch === maxBatch;
        return { maxBatch, maxBytes: maxBodyBytes, maxBatchIsOption };
      },
      envelopeBytes: BATCH_ENVELOPE_BYTES.http,
    });
  }

  /**
   * The server's limits, lowered by this client's settings: requests are shaped to what the
   * server takes, not refused by it.
   */
  private serverLimits(): Promise<ServerLimits> {
    this.loweredLimits ??= this.limits.read().then(
      (server) => this.lowered(server),
      (error: unknown) => {
        this.loweredLimits = undefined;
        throw error;
      },
    );
    return this.loweredLimits;
  }

  /**
   * A request the server refused whole (400, 413), or that got no answer from it (the server
   * gone or shutting down, a proxy's 5xx in its place; maybe restarted with other settings): the
   * limits it was shaped by are read again before the next one, as the stream's next connection
   * is told them afresh. Rethrows `error`.
   */
  private failed(error: unknown): never {
    if (
      error instanceof ValidationError ||
      error instanceof StorageUnavailableError ||
      error instanceof ConnectionLostError ||
      error instanceof ClosedError ||
      (error instanceof RemoteError && (error.code === 'PAYLOAD_TOO_LARGE' || error.status >= 500))
    ) {
      this.loweredLimits = undefined;
      this.limits.forget();
    }
    throw error;
  }

  private lowered(server: ServerLimits): ServerLimits {
    const { maxBatch, maxWaitPerRequestMs } = this.settings;
    return {
      ...server,
      maxBatch: Math.min(server.maxBatch, maxBatch ?? Number.POSITIVE_INFINITY),
      maxWaitMs: Math.min(server.maxWaitMs, maxWaitPerRequestMs ?? Number.POSITIVE_INFINITY),
    };
  }

  /**
   * A publish whose payload is nested deeper than the server takes in a request body (its
   * maxJsonDepth) is refused here, unsent: sent, it would make the server refuse the whole
   * request, and so every call of other callers coalesced with it.
   */
  async execute(
    queue: string,
    operations: Parameters<Channel['execute']>[1],
    whole = false,
  ): Promise<WireOutcome[]> {
    // Answered here, unsent: the client is closed, and the server may be gone too.
    const ended = this.endedAtClose.size === 0 ? undefined : this.endedByClose(operations);
    if (ended === undefined) return this.submit(queue, operations, whole);
    const sent = operations.filter((_, index) => ended[index] === undefined);
    const answers = sent.length === 0 ? [] : await this.submit(queue, sent, whole);
    let next = 0;
    return ended.map((outcome) => outcome ?? (answers[next++] as WireOutcome));
  }

  private async submit(
    queue: string,
    operations: readonly WireOperation[],
    whole: boolean,
  ): Promise<WireOutcome[]> {
    // Every call waits the same way, so the calls of one tick keep their order in the batch.
    const { maxJsonDepth } = await this.serverLimits();
    const outcomes = await withoutTooDeep(operations, maxJsonDepth, (sent) =>
      this.batcher.submit(queue, sent, whole),
    );
    this.noteSessions(queue, operations, outcomes);
    return outcomes;
  }

  /**
   * Remembers the sessions opened (a session the close has begun closing is closed at once);
   * forgets those closed, and those the server answered as ended.
   */
  private noteSessions(
    queue: string,
    operations: readonly WireOperation[],
    outcomes: readonly WireOutcome[],
  ): void {
    operations.forEach((operation, index) => {
      const outcome = outcomes[index];
      const session = operation.session;
      if (operation.type === 'openSession' && outcome?.ok === true) {
        const opened = outcome.value as string;
        this.sessions.set(opened, queue);
        if (this.closingSessions) this.closeSessions(queue, [opened]);
      } else if (typeof session !== 'string' || outcome === undefined) {
        return;
      } else if (operation.type === 'closeSession') {
        if (outcome.ok || !NOT_CLOSED.has(outcome.error.code)) this.sessions.delete(session);
      } else if (!outcome.ok && outcome.error.code === 'SESSION_CLOSED') {
        this.sessions.delete(session);
      }
    });
  }

  /**
   * Per operation, SESSION_CLOSED when it names a session the close ended (not sent), else
   * undefined (sent); undefined when none does.
   */
  private endedByClose(
    operations: readonly WireOperation[],
  ): (WireOutcome | undefined)[] | undefined {
    let ended: (WireOutcome | undefined)[] | undefined;
    operations.forEach((operation, index) => {
      const { session } = operation;
      if (typeof session !== 'string' || !this.endedAtClose.has(session)) return;
      ended ??= new Array(operations.length);
      ended[index] = {
        ok: false,
        error: { code: 'SESSION_CLOSED', message: `session ${session} ended as the client closed` },
      };
    });
    return ended;
  }

  /**
   * A receive that does not wait is a `reserve` operation, coalesced with the other calls of
   * its tick into one batch request (several reserves of it when it asks for more than
   * maxBatch), so concurrent consumers cost one request, not one each. Waits longer than one
   * request may carry (the server's maxWaitMs) are several long polls; a long poll answers with
   * what is ready when it wakes, at most the server's maxBatch.
   *
   * Its signal ends a long poll's wait, not the request: the server, told its client has gone,
   * gives back what it reserves from then on, and an answer it sent before is still read and
   * answered, so that the caller works or gives back its jobs rather than leave them leased.
   */
  async receive(queue: string, request: ChannelReceive): Promise<WireDelivery[]> {
    if (this.closing) throw new ClosedError('the client is closed');
    try {
      return await this.receiveOnce(queue, request);
    } catch (error) {
      // An ended session: nothing for the close to close.
      if (
        (error as { code?: unknown }).code === 'SESSION_CLOSED' &&
        request.session !== undefined
      ) {
        this.sessions.delete(request.session);
      }
      throw error;
    }
  }

  /** See receive. */
  private async receiveOnce(queue: string, request: ChannelReceive): Promise<WireDelivery[]> {
    const { wait, signal, ...asked } = request;
    // An aborted signal waits for nothing: what is ready, as in-process.
    if (wait === 0 || signal?.aborted) {
      return unwrap((await this.execute(queue, [reserveToWire(asked)]))[0]);
    }
    // Its own signal, or closing the client, ends the wait for the server's limits too (read at
    // the first call): as a long poll cut, with an empty answer.
    const ends = [
      signal,
      this.ending.signal,
      this.http.closed ? undefined : this.http.closingSignal,
    ];
    const limits = await untilAborted(this.serverLimits(), ends);
    if (limits === undefined) return [];
    const { maxBatch, maxWaitMs } = limits;
    const reserve = { ...asked, max: Math.min(asked.max ?? 1, maxBatch) };
    // Measured on the monotonic clock: a step of the wall clock neither ends the wait early
    // nor makes it go on (polling) for the size of the step. A poll's wait is whole ms.
    const until = performance.now() + wait;
    for (;;) {
      const chunk = Math.min(Math.ceil(Math.max(0, until - performance.now())), maxWaitMs);
      const started = performance.now();
      const poll = this.poll(queue, { ...reserve, wait: chunk }, signal);
      this.polls.add(poll);
      let answer: { deliveries: WireDelivery[] } | undefined;
      try {
        answer = await poll;
      } finally {
        this.polls.delete(poll);
      }
      // Ended by its own signal or by the close, with no answer: an empty one; answered as the
      // close began, with what the close did not give back.
      if (answer === undefined) return [];
      if (this.closing) return answer.deliveries;
      // An empty answer before the wait ran out means the server stopped waiting (shutdown).
      const now = performance.now();
      const endedEarly = now - started < chunk;
      if (answer.deliveries.length > 0 || now >= until || endedEarly || signal?.aborted) {
        return answer.deliveries;
      }
      const rest = Math.min(MIN_POLL_MS - (now - started), until - now);
      if (rest > 0 && (await pause(rest, ends))) return [];
    }
  }

  /**
   * One long poll, ended by `signal` or by the close (undefined when it then got no answer); an
   * answer the server sent as it ended still comes (HttpTransport.request). Answered as the close
   * began, its jobs are given back before it settles (givenBackAtClose).
   */
  private async poll(
    queue: string,
    body: WireOperationBody,
    signal: AbortSignal | undefined,
  ): Promise<{ deliveries: WireDelivery[] } | undefined> {
    if (this.ending.signal.aborted) return undefined;
    const ended = new AbortController();
    const end = () => ended.abort();
    const unwatches = [signal, this.ending.signal].flatMap((each) =>
      each === undefined ? [] : [onAbort(each, end)],
    );
    if (signal?.aborted) end();
    const open = !this.http.closed;
    let answer: { deliveries: WireDelivery[] };
    try {
      answer = await this.http.request('POST', `${queuePath(queue)}/receive`, {
        body,
        answer: { deliveries: 'array' },
        waitMs: body.wait,
        signal: ended.signal,
      });
    } catch (error) {
      // Its own signal, or closing the client, ends a waiting receive with an empty answer
      // (RemoteBroker.close), a failure that came once it ended too (nothing was handed out);
      // a receive made after the close fails with CLOSED.
      if (error instanceof RequestAborted || ended.signal.aborted) return undefined;
      if (error instanceof ClosedError && open && this.http.closed) return undefined;
      this.failed(error);
    } finally {
      for (const unwatch of unwatches) unwatch();
    }
    if (!this.closing) return answer;
    return { deliveries: await this.givenBackAtClose(queue, answer.deliveries, body.ack) };
  }

  /**
   * Deliveries answered to a long poll as the close began: the client cannot settle them once
   * closed, so they are given back unworked (R33), the last first so that they go back in the
   * order they were reserved, and none is answered. Auto-acked ones (R22) cannot go back: they
   * are answered, their only chance to be worked.
   */
  private async givenBackAtClose(
    queue: string,
    deliveries: WireDelivery[],
    ack: ChannelReceive['ack'],
  ): Promise<WireDelivery[]> {
    if (deliveries.length === 0 || ack === 'auto') return deliveries;
    const nacks = [...deliveries].reverse().map(
      (delivery): WireOperation => ({
        type: 'nack',
        receipt: delivery.receipt,
        attempted: false,
      }),
    );
    // Not given back (the server gone as well): left to their leases.
    await this.execute(queue, nacks).catch(() => undefined);
    return [];
  }

  /** See Channel.closing. */
  closing = false;
  /** Aborted as the close begins: ends the long polls in flight. */
  private readonly ending = new AbortController();
  /** The long polls in flight: the close waits for their answers, to give them back. */
  private readonly polls = new Set<Promise<unknown>>();
  /**
   * Sessions opened through this client and not known to have ended, by handle: their queue.
   * The close closes them, so that their deliveries are ready again at once rather than at the
   * session's timeout (R16), as a stream connection's sessions end with it.
   */
  private readonly sessions = new Map<string, string>();
  /** true once the close began closing the sessions left open. */
  private closingSessions = false;
  /** The closes of sessions the close sent, on their way: the close waits for them. */
  private readonly sessionCloses = new Set<Promise<void>>();
  /** Sessions the close ended: a call naming one afterwards is answered SESSION_CLOSED. */
  private readonly endedAtClose = new Set<string>();

  /**
   * Refuses receives from now on and ends the long polls in flight; waits for their answers
   * (what a server sent as they ended is given back), then closes the sessions opened through
   * this client and left open (their deliveries are released at once, R16): all within
   * CLOSE_WAIT_MS, or until `signal` aborts. A session the server could not close ends at its
   * timeout.
   */
  async close(signal?: AbortSignal): Promise<void> {
    this.closing = true;
    this.ending.abort();
    const until = performance.now() + CLOSE_WAIT_MS;
    if (this.polls.size > 0 && !(await within(until, signal, [...this.polls]))) return;
    if (signal?.aborted) return;
    this.closingSessions = true;
    const byQueue = new Map<string, string[]>();
    for (const [session, queue] of this.sessions) {
      const sessions = byQueue.get(queue);
      if (sessions === undefined) byQueue.set(queue, [session]);
      else sessions.push(session);
    }
    for (const [queue, sessions] of byQueue) this.closeSessions(queue, sessions);
    // Sessions whose open is answered meanwhile are closed too, within the same time.
    while (this.sessionCloses.size > 0) {
      if (!(await within(until, signal, [...this.sessionCloses]))) return;
    }
  }

  /**
   * Closes `sessions` of `queue` (as many to a request as the server's maxBatch lets through);
   * those the server answers as ended are answered SESSION_CLOSED from then on (endedByClose).
   * A failure is not thrown: the session ends at its timeout.
   */
  private closeSessions(queue: string, sessions: readonly string[]): void {
    const operations = sessions.map(
      (session): WireOperation => ({ type: 'closeSession', session }),
    );
    const closed = this.execute(queue, operations).then(
      (outcomes) => {
        outcomes.forEach((outcome, index) => {
          if (outcome.ok || !NOT_CLOSED.has(outcome.error.code)) {
            this.endedAtClose.add(sessions[index] as string);
          }
        });
      },
      () => {},
    );
    this.sessionCloses.add(closed);
    void closed.then(() => this.sessionCloses.delete(closed));
  }
}

/**
 * Waits for `promises` to settle, until `until` (on performance.now()) or until `signal`
 * aborts; true when they settled first.
 */
async function within(
  until: number,
  signal: AbortSignal | undefined,
  promises: readonly Promise<unknown>[],
): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = Promise.allSettled(promises).then(() => true);
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, until - performance.now()));
  });
  const done = await untilAborted(Promise.race([settled, timedOut]), [signal]);
  clearTimeout(timer);
  return done === true;
}

export function queuePath(queue: string): string {
  return `/v1/queues/${encodeURIComponent(queue)}`;
}

/** A receive's reserve as a wire operation (its session is already the server's handle). */
export function reserveToWire(reserve: Omit<ChannelReceive, 'wait' | 'signal'>): WireOperation {
  return operationToWire(build.reserve(reserve), {
    receipt: () => '',
    sessionHandle: (handle) => handle,
  });
}

/** The deliveries of a reserve's outcome, or its error thrown. */
export function unwrap(outcome: WireOutcome | undefined): WireDelivery[] {
  if (outcome === undefined) throw new Error('the server answered no outcome');
  if (!outcome.ok) throw errorFromWire(outcome.error);
  return outcome.value as WireDelivery[];
}

/** Whether `results` holds `count` outcomes (objects saying whether each operation was `ok`). */
function isOutcomeList(results: unknown, count: number): boolean {
  return (
    Array.isArray(results) &&
    results.length === count &&
    results.every(
      (outcome) =>
        typeof outcome === 'object' &&
        outcome !== null &&
        typeof (outcome as { ok?: unknown }).ok === 'boolean',
    )
  );
}

/** Waits `ms`; true when one of `signals` aborted first (the wait then ends at once). */
function pause(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const unwatches: (() => void)[] = [];
    const end = (aborted: boolean) => {
      clearTimeout(timer);
      for (const unwatch of unwatches) unwatch();
      resolve(aborted);
    };
    const timer = setTimeout(() => end(false), ms);
    for (const signal of signals) {
      if (signal === undefined) continue;
      if (signal.aborted) return end(true);
      unwatches.push(onAbort(signal, () => end(true)));
    }
  });
}
