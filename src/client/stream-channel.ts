import { onAbort } from '../broker/on-abort.js';
import { ClosedError, mayHaveTakenEffect } from '../core/index.js';
import type {
  ServerFrame,
  StreamLimits,
  WireDelivery,
  WireError,
  WireOperation,
  WireOutcome,
} from '../wire/index.js';
import type { Channel, ChannelReceive } from './channel.js';
import { errorFromWire } from './errors.js';
import { reserveToWire, unwrap } from './http-channel.js';
import { BATCH_ENVELOPE_BYTES, OperationBatcher } from './operation-batcher.js';
import { withoutTooDeep } from './payload-checks.js';
import { Prefetch, type Waiter } from './prefetch.js';
import { StreamLink, type StreamLinkOptions } from './stream-link.js';

export interface StreamChannelOptions extends StreamLinkOptions {
  /** How long pushed deliveries wait for a receive before they are given back. */
  prefetchIdleMs: number;
}

/**
 * The client's close waits this long at most for the server: for the held deliveries it gives
 * back, then for the answer to its close of the connection.
 */
const CLOSE_TIMEOUT_MS = 2000;
/** How often a waiting at-most-once receive over the stream tries again. */
const AUTO_ACK_RETRY_MS = 100;
/**
 * Refusals of a closeSession sent for an ended session that say the server could not do it
 * now: the session is closed again at the next connection. Any other answer (closed, or
 * SESSION_CLOSED, NOT_FOUND: it already was) lets the client forget it.
 */
const CLOSE_AGAIN = new Set([
  'STORAGE_UNAVAILABLE',
  'STORAGE_LOCKED',
  'CLOSED',
  'TOO_MANY_REQUESTS',
]);

/** Waits `ms`, or until one of `signals` aborts. */
function delay(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal?.aborted)) return resolve();
    const done = () => {
      clearTimeout(timer);
      for (const unwatch of unwatches) unwatch();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unwatches = signals.flatMap((signal) =>
      signal === undefined ? [] : [onAbort(signal, done)],
    );
  });
}

/**
 * Operations and receives over the stream (docs/stream.md): the operations of one tick are
 * one batch frame per queue; a receive that waits is served by a subscription, whose pushes
 * keep a consumer's next jobs on their way while it works on the current ones.
 */
export class StreamChannel implements Channel {
  private readonly link: StreamLink;
  private readonly batcher: OperationBatcher;
  private readonly prefetches = new Map<string, Prefetch>();
  /** See Channel.closing. */
  closing = false;
  /** Aborted as the close begins: ends the waits of at-most-once receives. */
  private readonly ending = new AbortController();
  /** The looks of at-most-once receives on their way: the close waits for their answers. */
  private readonly autoAckLooks = new Set<Promise<unknown>>();
  /**
   * Sessions opened through this client and not closed, by handle: their queue and the
   * connection each was opened over. A session ends with its connection (R16, docs/stream.md),
   * so a call naming one after that is answered SESSION_CLOSED here, at once. The server closes
   * it when it sees the connection end; one that died before it could (a crash) has it still
   * open in its storage, so the next connection closes it there too (closeEnded). A session is
   * forgotten once it is closed on the server.
   */
  private readonly sessions = new Map<string, { queue: string; connection: number }>();
  /** The closes of ended sessions on their way (see closeEnded): the client's close waits. */
  private readonly endedClosing = new Set<Promise<unknown>>();

  constructor(
    url: string,
    private readonly options: StreamChannelOptions,
  ) {
    this.link = new StreamLink(url, options);
    this.link.onOpen((limits) => this.closeEnded(limits));
    this.batcher = new OperationBatcher({
      send: (queue, operations) => this.sendBatch(queue, operations),
      limits: async () => {
        const { maxBatch, maxFrameBytes } = await this.link.knownLimits();
        return { maxBatch, maxBytes: maxFrameBytes };
      },
      envelopeBytes: BATCH_ENVELOPE_BYTES.stream,
    });
  }

  async execute(
    queue: string,
    operations: readonly WireOperation[],
    whole = false,
  ): Promise<WireOutcome[]> {
    // Answered here, before anything waits for a connection: the server is maybe gone too.
    const ended = this.sessions.size === 0 ? undefined : this.sessionsEnded(operations);
    if (ended === undefined) return this.submit(queue, operations, whole);
    const sent = operations.filter((_, index) => ended[index] === undefined);
    const answers = sent.length === 0 ? [] : await this.submit(queue, sent, whole);
    let next = 0;
    return ended.map((outcome) => outcome ?? (answers[next++] as WireOutcome));
  }

  private async submit(queue: string, operations: readonly WireOperation[], whole = false) {
    // timeoutMs counts from the call: one made while no connection is open waits for one, and
    // has what is left of it for its answer (its frame's own timer starts only when it is sent).
    const deadline = this.link.connected ? undefined : performance.now() + this.options.timeoutMs;
    // Before anything waits: a worker's next receive follows its ack within the same tick.
    const settling = this.prefetches.size > 0 ? this.noteSettling(queue, operations) : undefined;
    const closing =
      this.prefetches.size > 0 ? await this.giveBackSessionHeld(queue, operations) : undefined;
    let outcomes: WireOutcome[];
    try {
      // Every call waits for the limits alike, so the calls of one tick keep their order.
      const { maxJsonDepth = Number.POSITIVE_INFINITY } = await this.link.knownLimits(deadline);
      const answered = withoutTooDeep(operations, maxJsonDepth, (sent) =>
        this.batcher.submit(queue, sent, whole),
      );
      outcomes = await (deadline === undefined
        ? answered
        : this.link.answeredBy(answered, deadline));
    } catch (error) {
      settling?.(() => true);
      closing?.(operations, undefined);
      throw error;
    }
    settling?.((index) => outcomes[index]?.ok !== true);
    closing?.(operations, outcomes);
    this.noteSettles(queue, operations, outcomes);
    return outcomes;
  }

  /**
   * Tells the queue's subscriptions which deliveries they handed out have an ack or nack on its
   * way (see Prefetch.settling); answers what to call with the operations that then failed (their
   * deliveries count in hand again).
   */
  private noteSettling(
    queue: string,
    operations: readonly WireOperation[],
  ): ((failed: (index: number) => boolean) => void) | undefined {
    const receipts = operations.flatMap(settledReceipts);
    if (receipts.length === 0) return undefined;
    const prefetches = [...this.prefetches.values()].filter((each) => each.queue === queue);
    for (const prefetch of prefetches) prefetch.settling(receipts, true);
    return (failed) => {
      const unsettled = operations.flatMap((operation, index) =>
        failed(index) ? settledReceipts(operation) : [],
      );
      if (unsettled.length === 0) return;
      for (const prefetch of prefetches) prefetch.settling(unsettled, false);
    };
  }

  /**
   * An operation on a whole session (closeSession, ackUpTo, nackUpTo) reaches every delivery
   * the server holds in it, those this client holds unhanded among them: they are given back
   * first, unworked (R33), and the session's subscription ended, so that the operation acts on
   * what its consumers had, as over plain HTTP. Its receives waiting then answer empty and
   * receive again; those of a session being closed are answered once the close is: refused
   * with SESSION_CLOSED (R16) when it was closed, else empty. Answers what answers them.
   */
  private async giveBackSessionHeld(
    queue: string,
    operations: readonly WireOperation[],
  ): Promise<SessionCloseAnswer | undefined> {
    // The common frame (acks, reserves) names no session: nothing is made for it.
    if (!operations.some(onWholeSession)) return undefined;
    const sessions = new Set<unknown>();
    const closed = new Set<unknown>();
    for (const operation of operations) {
      if (!onWholeSession(operation)) continue;
      sessions.add(operation.session);
      if (operation.type === 'closeSession') closed.add(operation.session);
    }
    const ends: Promise<unknown>[] = [];
    const waiting = new Map<unknown, Pick<Waiter, 'resolve' | 'reject'>[]>();
    for (const [key, prefetch] of this.prefetches) {
      if (prefetch.queue !== queue || !sessions.has(prefetch.session)) continue;
      if (!closed.has(prefetch.session)) {
        ends.push(prefetch.end());
        continue;
      }
      this.prefetches.delete(key);
      ends.push(
        prefetch.endKeepingWaiters().then((waiters) => {
          waiting.set(prefetch.session, [...(waiting.get(prefetch.session) ?? []), ...waiters]);
        }),
      );
    }
    await Promise.all(ends);
    if (waiting.size === 0) return undefined;
    return (sent, outcomes) => {
      sent.forEach((operation, index) => {
        const waiters =
          operation.type === 'closeSession' ? waiting.get(operation.session) : undefined;
        if (waiters === undefined) return;
        waiting.delete(operation.session);
        const outcome = outcomes?.[index];
        const ended = outcome?.ok === true || outcome?.error.code === 'SESSION_CLOSED';
        for (const waiter of waiters) {
          if (!ended) waiter.resolve([]);
          else
            waiter.reject(
              errorFromWire({
                code: 'SESSION_CLOSED',
                message: `session ${String(operation.session)} has ended`,
              }),
            );
        }
      });
    };
  }

  /** Tells the queue's subscriptions which of the deliveries they handed out are settled. */
  private noteSettles(
    queue: string,
    operations: readonly WireOperation[],
    outcomes: readonly WireOutcome[],
  ): void {
    if (this.prefetches.size === 0) return;
    const settled: string[] = [];
    const extended: { receipt: string; deadline: number }[] = [];
    const cancelled = new Set<string>();
    // The sessions whose deliveries an operation ended: only their subscriptions' are over.
    const sessionsEnded = new Set<unknown>();
    let purged = false;
    operations.forEach((operation, index) => {
      const outcome = outcomes[index];
      if (outcome === undefined || !outcome.ok) return;
      switch (operation.type) {
        case 'ack':
        case 'nack':
          settled.push(...settledReceipts(operation));
          break;
        case 'extend':
          if (outcome.value === null) settled.push(operation.receipt as string);
          else
            extended.push({
              receipt: operation.receipt as string,
              deadline: outcome.value as number,
            });
          break;
        case 'ackUpTo':
        case 'nackUpTo':
        case 'closeSession':
          sessionsEnded.add(operation.session);
          break;
        case 'purgeQueue':
          purged = true;
          break;
        case 'cancel':
          // true: the job was in the queue, not dead, and its delivery (if any) has ended.
          if (outcome.value === true) cancelled.add(operation.id as string);
          break;
      }
    });
    if (
      settled.length === 0 &&
      extended.length === 0 &&
      cancelled.size === 0 &&
      sessionsEnded.size === 0 &&
      !purged
    ) {
      return;
    }
    for (const prefetch of this.prefetches.values()) {
      if (prefetch.queue !== queue) continue;
      // Held deliveries of purged or cancelled jobs are over: handed out, they would be jobs
      // gone or dead, in place of ready ones.
      if (purged) prefetch.purged();
      else if (prefetch.session !== undefined && sessionsEnded.has(prefetch.session)) {
        prefetch.settledAll();
      } else prefetch.settled(settled);
      if (cancelled.size > 0) prefetch.cancelled(cancelled);
      prefetch.extended(extended);
    }
  }

  async receive(queue: string, request: ChannelReceive): Promise<WireDelivery[]> {
    if (this.closing) throw new ClosedError('the client is closed');
    const { wait, signal, ...reserve } = request;
    const max = reserve.max ?? 1;
    if (reserve.ack === 'auto') return this.receiveAutoAcked(queue, reserve, wait, signal);
    const ended = this.sessions.size === 0 ? undefined : this.sessionEnded(reserve.session);
    if (ended !== undefined) throw errorFromWire(ended);
    const key = JSON.stringify([queue, reserve.visibility ?? null, reserve.session ?? null]);
    let prefetch = this.prefetches.get(key);
    // An aborted signal waits for nothing: as the in-process receive, what is ready (held, else
    // one reserve), and no subscription, which nothing would end.
    if (wait === 0 || signal?.aborted) {
      const held = prefetch?.takeHeld(max) ?? [];
      if (held.length > 0) return held;
      return this.reserveNow(queue, reserve);
    }
    if (prefetch === undefined) {
      const created: Prefetch = new Prefetch(this.link, {
        queue,
        visibility: reserve.visibility,
        session: reserve.session,
        idleMs: this.options.prefetchIdleMs,
        release: (name, receipts) => this.release(name, receipts),
        reserve: (count) =>
          this.reserveNow(queue, {
            max: count,
            visibility: reserve.visibility,
            session: reserve.session,
            ack: undefined,
          }),
        othersWaiting: () => this.waitingElsewhere(queue, created),
        waiting: () => {
          for (const other of this.prefetches.values()) {
            if (other !== created && other.queue === queue) other.othersBeganToWait();
          }
        },
        idle: () => {
          if (this.prefetches.get(key) === created) this.prefetches.delete(key);
        },
        makeRoom: (maxSubscriptions) => this.makeRoom(created, maxSubscriptions),
        sessionEnded: () => {
          if (reserve.session !== undefined) {
            this.forgetEnded(reserve.session, this.link.connection);
          }
        },
      });
      prefetch = created;
    } else {
      // Kept in the order they were last received through: the first is the least recent.
      this.prefetches.delete(key);
    }
    this.prefetches.set(key, prefetch);
    if (!prefetch.holding) this.freeHeldElsewhere(queue, prefetch);
    const connection = this.link.connection;
    try {
      return await prefetch.take(max, wait, signal);
    } catch (error) {
      // Its subscription ended by the server with the session (timed out, closed elsewhere).
      if (
        (error as { code?: unknown }).code === 'SESSION_CLOSED' &&
        reserve.session !== undefined
      ) {
        this.forgetEnded(reserve.session, connection);
      }
      throw error;
    }
  }

  /**
   * A session the server said had ended, over the connection it was opened over: nothing to
   * close later. One opened over an earlier connection stays until closeEnded has closed it.
   * Its subscriptions are over either way.
   */
  private forgetEnded(session: string, connection: number | undefined): void {
    if (this.sessions.get(session)?.connection === connection) this.sessions.delete(session);
    this.endSubscriptionsOf(session);
  }

  /**
   * The subscriptions of a session that has ended: nothing can receive in it any more, and a
   * worker opens a session anew each time one ends (its connection lost, say), so kept, they
   * would pile up for as long as the client lives.
   */
  private endSubscriptionsOf(session: string): void {
    for (const [key, prefetch] of this.prefetches) {
      if (prefetch.session !== session) continue;
      this.prefetches.delete(key);
      void prefetch.end();
    }
  }

  /** One `reserve` operation: what is ready now. */
  private async reserveNow(
    queue: string,
    reserve: Omit<ChannelReceive, 'wait' | 'signal'>,
  ): Promise<WireDelivery[]> {
    return unwrap((await this.execute(queue, [reserveToWire(reserve)]))[0]);
  }

  /**
   * A receive about to wait on `queue` while a one-off receive's subscription of it is left open
   * (a `receive` with other settings, say, before a `work()`): it ends now, giving back what it
   * holds, rather than hold that, or the next job pushed to it, for prefetchIdleMs while the
   * waiting receive has none.
   */
  private freeHeldElsewhere(queue: string, waiting: Prefetch): void {
    for (const other of this.prefetches.values()) {
      if (other === waiting || other.queue !== queue) continue;
      // Only a one-off's: a worker's subscription holds what is pushed between two of its
      // receives (its handlers busy), and takes it at the next. Ended whenever another worker
      // began to wait, both would subscribe again and again, their jobs given back and pushed
      // again each time; what it holds goes back SHARE_AFTER_MS after its push if untaken.
      if (other.idleOneOff) void other.end();
    }
  }

  /**
   * `opening` is about to subscribe: when that would take the client past the server's
   * `maxSubscriptions`, subscriptions that nothing uses (a one-off receive's, left open for the
   * next receive of it) are ended first, those holding nothing before the others, least
   * recently received through first; answers once they have ended (what they held, or were
   * pushed meanwhile, given back unworked), undefined when none need be. Those in use stay:
   * past them the server refuses the subscribe, as docs/stream.md says.
   */
  private makeRoom(
    opening: Prefetch,
    maxSubscriptions: number | undefined,
  ): Promise<unknown> | undefined {
    if (maxSubscriptions === undefined) return undefined;
    // Those being ended count as gone (each ended to make room is another subscribe's room),
    // but still hold theirs on the server until their unsubscribe is answered.
    let open = 0;
    const leaving: Promise<void>[] = [];
    for (const prefetch of this.prefetches.values()) {
      if (prefetch === opening) continue;
      if (prefetch.leaving) leaving.push(prefetch.end());
      else if (prefetch.subscribed) open += 1;
    }
    if (open + leaving.length < maxSubscriptions) return undefined;
    let over = open + 1 - maxSubscriptions;
    // Those holding nothing first: the others' held deliveries would go back unworked (R33).
    for (const holding of [false, true]) {
      for (const prefetch of this.prefetches.values()) {
        if (over <= 0) break;
        if (prefetch === opening || !prefetch.unused || prefetch.holding !== holding) continue;
        leaving.push(prefetch.end());
        over -= 1;
      }
    }
    return leaving.length === 0 ? undefined : Promise.all(leaving);
  }

  /** Whether a receive of another subscription of this client waits on `queue` with nothing. */
  private waitingElsewhere(queue: string, self: Prefetch): boolean {
    for (const other of this.prefetches.values()) {
      if (other !== self && other.queue === queue && other.waitingWithNothing) return true;
    }
    return false;
  }

  /**
   * An at-most-once receive is never pushed ahead (a pushed job would be gone with the
   * connection): each try is one reserve, and a wait retries every AUTO_ACK_RETRY_MS.
   */
  private async receiveAutoAcked(
    queue: string,
    reserve: Omit<ChannelReceive, 'wait' | 'signal'>,
    wait: number,
    signal: AbortSignal | undefined,
  ): Promise<WireDelivery[]> {
    // Measured on the monotonic clock: on the wall clock, one stepped back an hour made the
    // receive try again for an hour more than its wait.
    const until = performance.now() + wait;
    const wire = reserveToWire(reserve);
    for (;;) {
      // The close waits for its answer: the jobs it took cannot go back (R22), and are answered.
      const look = this.execute(queue, [wire]);
      this.autoAckLooks.add(look);
      let deliveries: WireDelivery[];
      try {
        deliveries = unwrap((await look)[0]);
      } catch (error) {
        // Closed before this look could be sent: a waiting receive answers empty (see close).
        if (this.closing && error instanceof ClosedError && !mayHaveTakenEffect(error)) return [];
        throw error;
      } finally {
        this.autoAckLooks.delete(look);
      }
      const left = until - performance.now();
      if (deliveries.length > 0 || left <= 0 || signal?.aborted) return deliveries;
      await delay(Math.min(left, AUTO_ACK_RETRY_MS), [signal, this.ending.signal]);
      if (this.closing) return [];
    }
  }

  /**
   * Gives back held deliveries and waits for the answers of at-most-once looks on their way,
   * then closes the connection: all within CLOSE_TIMEOUT_MS, the server's answer to the close
   * included, or at once once `signal` aborts.
   */
  async close(signal?: AbortSignal): Promise<void> {
    this.closing = true;
    this.ending.abort();
    const until = performance.now() + CLOSE_TIMEOUT_MS;
    // Sessions of a lost connection are closed over one opened for them (closeLeftSessions): the
    // calls that wait for a connection fail now, unsent, as the link's close would fail them.
    const reconnect = this.sessionsLeft() && !this.link.connected && !signal?.aborted;
    if (reconnect) this.link.refuseWaiting();
    const ends = [
      ...[...this.prefetches.values()].map((prefetch) => prefetch.close()),
      // Without an open connection none was sent: the link's close fails them at once, unrun.
      ...(this.link.connected ? this.autoAckLooks : []),
      this.closeLeftSessions(until, reconnect),
    ];
    this.prefetches.clear();
    let timer: NodeJS.Timeout | undefined;
    let stop = () => {};
    await Promise.race([
      Promise.allSettled(ends),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLOSE_TIMEOUT_MS).unref();
        stop = resolve;
        if (signal?.aborted) resolve();
        else signal?.addEventListener('abort', stop, { once: true });
      }),
    ]);
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
    await this.link.close(Math.max(0, until - performance.now()), signal);
  }

  /** Whether a session is remembered that was opened over a connection that has ended since. */
  private sessionsLeft(): boolean {
    const current = this.link.connection;
    for (const { connection } of this.sessions.values()) if (connection !== current) return true;
    return false;
  }

  /**
   * The client's close: sessions opened over a connection that has ended (a server that died
   * did not close them, and holds their deliveries until the session's timeout) are closed as
   * the next call would close them, in the first frames of a connection opened for it
   * (`reconnect`) at once, whatever backoff is under way. Resolves once the server answered
   * those frames (or the ones an open connection sent), or when the server cannot be reached by
   * `until`: the sessions then end at their timeout.
   */
  private async closeLeftSessions(until: number, reconnect: boolean): Promise<void> {
    if (reconnect) {
      try {
        await this.link.connectNow(until);
      } catch {
        return;
      }
    }
    await Promise.allSettled([...this.endedClosing]);
  }

  /**
   * Gives held deliveries back, unworked (R33: no delivery of their jobs); each goes to the front
   * of ready (R9), so the last goes first.
   */
  private async release(queue: string, receipts: string[]): Promise<void> {
    await this.execute(
      queue,
      [...receipts].reverse().map((receipt) => ({ type: 'nack', receipt, attempted: false })),
    );
  }

  private async sendBatch(queue: string, operations: WireOperation[]): Promise<WireOutcome[]> {
    const answer = await this.link.request({ type: 'batch', queue, operations });
    if (answer.type === 'results') return this.noteSessions(queue, operations, answer.results);
    if (answer.type === 'error') throw errorFromWire(answer.error);
    throw new Error(`unexpected answer ${answer.type} to a batch`);
  }

  /**
   * Per operation, SESSION_CLOSED when it names a session opened over a connection that has
   * ended since (not sent), else undefined (sent); undefined when none does.
   */
  private sessionsEnded(
    operations: readonly WireOperation[],
  ): (WireOutcome | undefined)[] | undefined {
    let ended: (WireOutcome | undefined)[] | undefined;
    operations.forEach((operation, index) => {
      const error = this.sessionEnded(operation.session);
      if (error === undefined) return;
      // A closeSession of it too: it is closed on the server at the next connection (closeEnded).
      ended ??= new Array(operations.length);
      ended[index] = { ok: false, error };
    });
    return ended;
  }

  /** SESSION_CLOSED when `session` was opened over a connection that has ended since. */
  private sessionEnded(session: unknown): WireError | undefined {
    if (typeof session !== 'string') return undefined;
    const openedOver = this.sessions.get(session)?.connection;
    if (openedOver === undefined || openedOver === this.link.connection) return undefined;
    return {
      code: 'SESSION_CLOSED',
      message: `session ${session} ended with the stream connection it was opened over`,
    };
  }

  /** Remembers the sessions opened, on which queue and connection; forgets those closed. */
  private noteSessions(
    queue: string,
    operations: WireOperation[],
    outcomes: WireOutcome[],
  ): WireOutcome[] {
    operations.forEach((operation, index) => {
      const outcome = outcomes[index];
      if (operation.type === 'openSession' && outcome?.ok === true) {
        // The connection that answered; 0, no connection's number, when it has already ended.
        this.sessions.set(outcome.value as string, {
          queue,
          connection: this.link.connection ?? 0,
        });
      } else if (operation.type === 'closeSession' && typeof operation.session === 'string') {
        this.sessions.delete(operation.session);
      } else if (
        outcome?.ok === false &&
        outcome.error.code === 'SESSION_CLOSED' &&
        typeof operation.session === 'string'
      ) {
        this.forgetEnded(operation.session, this.link.connection);
      }
    });
    return outcomes;
  }

  /**
   * A new connection: every session still remembered was opened over an earlier one, which
   * ended it for its user. A server that crashed never closed it, and holds its deliveries until
   * the session's timeout; closed here, in the connection's first frames, they are ready again at
   * once. A server that did close it answers SESSION_CLOSED, which is as good.
   */
  private closeEnded(limits: StreamLimits): void {
    if (this.sessions.size === 0) return;
    const byQueue = new Map<string, string[]>();
    for (const [session, { queue }] of this.sessions) {
      const sessions = byQueue.get(queue);
      if (sessions === undefined) byQueue.set(queue, [session]);
      else sessions.push(session);
    }
    for (const [queue, sessions] of byQueue) {
      // As many to a frame as the server's maxBatch and maxFrameBytes let through.
      const envelope = BATCH_ENVELOPE_BYTES.stream(queue);
      let chunk: WireOperation[] = [];
      let bytes = envelope;
      const send = () => {
        const operations = chunk;
        const closed = this.link.request({ type: 'batch', queue, operations }).then(
          (answer) => this.notedClosed(operations, answer),
          // Not answered (the connection dropped again): closed at the next connection.
          () => {},
        );
        this.endedClosing.add(closed);
        void closed.then(() => this.endedClosing.delete(closed));
      };
      for (const session of sessions) {
        const operation: WireOperation = { type: 'closeSession', session };
        const size = Buffer.byteLength(JSON.stringify(operation), 'utf8') + 1;
        if (
          chunk.length > 0 &&
          (chunk.length >= limits.maxBatch || bytes + size > limits.maxFrameBytes)
        ) {
          send();
          chunk = [];
          bytes = envelope;
        }
        chunk.push(operation);
        bytes += size;
      }
      send();
    }
  }

  /** Forgets the ended sessions the server closed, or knew closed already. */
  private notedClosed(operations: WireOperation[], answer: ServerFrame): void {
    const outcomes =
      answer.type === 'results'
        ? answer.results
        : answer.type === 'error'
          ? operations.map((): WireOutcome => ({ ok: false, error: answer.error }))
          : [];
    operations.forEach((operation, index) => {
      const outcome = outcomes[index];
      if (outcome === undefined || (!outcome.ok && CLOSE_AGAIN.has(outcome.error.code))) return;
      this.sessions.delete(operation.session as string);
      this.endSubscriptionsOf(operation.session as string);
    });
  }
}

/** Answers the receives that waited in sessions a batch closed, by that batch's outcomes. */
type SessionCloseAnswer = (
  sent: readonly WireOperation[],
  outcomes: readonly WireOutcome[] | undefined,
) => void;

/** closeSession, ackUpTo and nackUpTo: operations on every delivery of a session. */
function onWholeSession(operation: WireOperation): boolean {
  const { type } = operation;
  return type === 'closeSession' || type === 'ackUpTo' || type === 'nackUpTo';
}

/** The receipts of the deliveries an ack or nack settles; none for any other operation. */
function settledReceipts(operation: WireOperation): string[] {
  if (operation.type === 'ack') return operation.receipts as string[];
  if (operation.type === 'nack') return [operation.receipt as string];
  return [];
}
