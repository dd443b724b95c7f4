import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Queue } from '../../broker/index.js';
import {
  ClosedError,
  NotFoundError,
  OPERATION_TYPES,
  type Operation,
  type Outcome,
  ValidationError,
} from '../../core/index.js';
import {
  type BatchFrame,
  type ClientFrame,
  type CreditFrame,
  clientFrameFromWire,
  type DeliveriesFrame,
  frameId,
  type ServerFrame,
  STREAM_CLOSE,
  type SubscribeFrame,
  type UnsubscribeFrame,
  type WireOutcome,
} from '../../wire/index.js';
import type { Principal } from '../auth.js';
import { authorize, authorizeAny } from '../auth.js';
import { ServerError } from '../errors.js';
import { checkJsonBody, checkQueueVisibility } from '../limits.js';
import type { StreamEndReason } from '../metrics.js';
import { refused, runOperations } from '../operation-runner.js';
import type { Services } from '../route.js';
import { Subscription } from './subscription.js';

/** Frames being executed at once on one connection; more wait in the socket (back-pressure). */
const MAX_FRAMES_IN_FLIGHT = 64;
/** How often a backed-up connection is checked for having drained. */
const DRAIN_CHECK_MS = 20;
/** Operation types as metric labels; anything else a client sends is counted as `invalid`. */
const KNOWN_TYPES: ReadonlySet<string> = new Set(OPERATION_TYPES);

export interface ConnectionContext {
  services: Services;
  principal: Principal;
  log: FastifyBaseLogger;
  now(): number;
  /** Called once when the connection has ended and cleaned up. */
  onEnded(): void;
}

/**
 * One client's stream: batches of operations answered in order, subscriptions pushing
 * deliveries under their prefetch, heartbeats. A frame that cannot be read gets an error frame
 * and changes nothing. When the connection ends, its subscriptions stop and the sessions it
 * opened are closed, which releases their deliveries (R12); other deliveries stay leased to
 * the client until their deadline or its ack over another connection.
 */
export class StreamConnection {
  private readonly subscriptions = new Map<number, Subscription>();
  /** Ids of subscribes between their checks and their answer. */
  private readonly opening = new Map<number, Promise<void>>();
  /** The end of this connection, once begun (its sessions closed when it resolves). */
  private ending: Promise<void> | undefined;
  /** Resolves once the connection has ended and cleaned up, however it ended. */
  private readonly gone: Promise<void>;
  private markGone!: () => void;
  /** The server is shutting down: frames are refused (CLOSED), the answers still owed go out. */
  private shuttingDown = false;
  /** Sessions opened over this connection: queue name → session ids. */
  private readonly sessions = new Map<string, { queue: Queue; ids: Set<string> }>();
  private replies: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private readingPaused = false;
  private alive = true;
  private ended = false;
  private backedUpSince: number | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  /** Why the server ended the connection; a close it did not start is the client's. */
  private endReason: StreamEndReason = 'client';

  constructor(
    private readonly socket: WebSocket,
    private readonly context: ConnectionContext,
  ) {
    const { limits } = context.services;
    this.gone = new Promise((resolve) => {
      this.markGone = resolve;
    });
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('pong', () => {
      this.alive = true;
    });
    socket.on('close', () => void this.end());
    socket.on('error', (error) => context.log.debug({ err: error }, 'stream socket error'));
    this.heartbeat = setInterval(() => this.beat(), limits.streamHeartbeatMs);
    this.send({
      type: 'ready',
      version: '1',
      limits: {
        maxFrameBytes: limits.maxBodyBytes,
        maxBatch: limits.maxBatch,
        maxPrefetch: limits.maxPrefetch,
        maxSubscriptions: limits.maxSubscriptions,
        heartbeatMs: limits.streamHeartbeatMs,
      },
    });
  }

  /**
   * Ends the connection with a close code (shutdown, slow consumer). Its subscriptions stop and
   * its sessions close now, not at the end of the close handshake: at shutdown the storage
   * closes next, and a session left open would hold its deliveries until their deadlines.
   */
  close(code: number, reason: string, why: StreamEndReason = 'shutdown'): Promise<void> {
    if (this.endReason === 'client') this.endReason = why;
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(code, reason);
    // A peer that does not answer the close handshake is cut.
    setTimeout(() => this.socket.terminate(), 1000).unref();
    return this.end();
  }

  /**
   * Shutdown: the connection takes no more work (later frames are answered `CLOSED` and change
   * nothing), its subscriptions stop pushing, and once every frame in flight has been answered,
   * in order, it is closed with 1001. Resolves when the connection has ended, which may be
   * sooner: the client closed it, or the server cut it (`cut`) after its shutdown timeout.
   */
  shutDown(): Promise<void> {
    if (!this.shuttingDown && this.ending === undefined) {
      this.shuttingDown = true;
      void this.drain();
    }
    return this.gone;
  }

  /** Ends the connection at once, answers still owed or not (the shutdown timeout passed). */
  cut(): Promise<void> {
    if (this.endReason === 'client') this.endReason = 'shutdown';
    this.socket.terminate();
    void this.end();
    return this.gone;
  }

  /** What a connection owes when shutdown begins: its answers, then a close with 1001. */
  private async drain(): Promise<void> {
    const subscriptions = [...this.subscriptions.values()];
    for (const subscription of subscriptions) this.forget(subscription.id);
    const stopped = Promise.all(subscriptions.map((subscription) => subscription.close()));
    try {
      // No frame starts any more (they are refused), so the count only falls. The chain's end
      // then holds the answers of all of them, and the CLOSED answers queued behind.
      while (this.inFlight > 0) await this.replies;
      await this.replies;
      await stopped;
    } catch (error) {
      this.context.log.warn({ err: error }, 'stream shutdown: answering frames in flight failed');
    }
    await this.close(STREAM_CLOSE.shuttingDown, 'server shutting down');
  }

  private onMessage(data: unknown, isBinary: boolean): void {
    this.alive = true;
    const { metrics } = this.context.services;
    let value: unknown;
    try {
      if (isBinary) throw new ValidationError('frames are JSON text, not binary');
      value = JSON.parse(String(data));
    } catch (error) {
      metrics.stream.frameReceived('invalid');
      this.refuse(
        undefined,
        error instanceof ValidationError ? error : new ValidationError('a frame must be JSON text'),
      );
      return;
    }
    let frame: ClientFrame;
    try {
      checkJsonBody(value, this.context.services.limits.maxJsonDepth);
      frame = clientFrameFromWire(value);
    } catch (error) {
      metrics.stream.frameReceived('invalid');
      this.refuse(frameId(value), this.shuttingDown ? shuttingDownError() : error);
      return;
    }
    metrics.stream.frameReceived(frame.type);
    if (this.shuttingDown) {
      // As HTTP answers a request that comes during shutdown: 503 CLOSED, nothing done.
      this.refuse(frame.id, shuttingDownError());
      return;
    }
    let answered!: () => void;
    const sent = new Promise<void>((resolve) => {
      answered = resolve;
    });
    this.track(this.answer(frame, sent), answered);
  }

  /**
   * `sent`: resolves once the answer has gone out. Async, so that whatever one frame throws
   * becomes its error frame, never an exception in the socket's listener (which ends the process).
   */
  private async answer(frame: ClientFrame, sent: Promise<void>): Promise<ServerFrame> {
    switch (frame.type) {
      case 'batch':
        return this.batch(frame, sent);
      case 'subscribe':
        return this.subscribe(frame, sent);
      case 'credit':
        return this.credit(frame);
      case 'unsubscribe':
        return this.unsubscribe(frame);
    }
  }

  /** Answers go out in the order the frames came in; many frames in flight pause reading. */
  private track(answer: Promise<ServerFrame>, answered: () => void): void {
    this.inFlight += 1;
    this.updateReading();
    const settled = answer.then(
      (frame) => frame,
      (error: unknown): ServerFrame => ({
        type: 'error',
        error: refused(error, this.context.log).error,
      }),
    );
    this.replies = this.replies.then(async () => {
      try {
        this.send(await settled);
      } finally {
        answered();
        this.inFlight -= 1;
        this.updateReading();
      }
    });
  }

  private async batch(frame: BatchFrame, sent: Promise<void>): Promise<ServerFrame> {
    const { services, principal, log } = this.context;
    try {
      authorizeAny(principal, frame.queue);
      const queue = await services.queues.existing(frame.queue);
      if (frame.operations.length > services.limits.maxBatch) {
        throw new ValidationError(
          `operations must have at most ${services.limits.maxBatch} entries, got ${frame.operations.length} (this server's maxBatch)`,
        );
      }
      const results = await runOperations(
        {
          queue,
          principal,
          receipts: services.receipts,
          limits: services.limits,
          log,
          queues: services.queues,
        },
        frame.operations,
        ({ operation, outcome }) => this.observe(queue, operation, outcome),
        (operations) => this.refill(queue, operations, sent),
      );
      this.count(frame.operations, results);
      return { type: 'results', id: frame.id, results };
    } catch (error) {
      return { type: 'error', id: frame.id, error: refused(error, log).error };
    }
  }

  /**
   * Acks of pushed deliveries give their credit back: the queue's subscriptions that wait for
   * it reserve their next deliveries now, in the storage unit of those acks (one commit for
   * both), to push once the acks are settled and answered (`answered`).
   */
  private refill(queue: Queue, operations: readonly Operation[], answered: Promise<void>): void {
    if (this.subscriptions.size === 0) return;
    const tokens: number[] = [];
    for (const operation of operations) {
      if (operation.type === 'ack') tokens.push(...operation.tokens);
    }
    if (tokens.length === 0) return;
    for (const subscription of this.subscriptions.values()) {
      if (subscription.queue.name === queue.name) subscription.refill(tokens, answered);
    }
  }

  private count(inputs: readonly unknown[], results: readonly WireOutcome[]): void {
    const { stream } = this.context.services.metrics;
    results.forEach((result, index) => {
      const type = (inputs[index] as { type?: unknown } | null)?.type;
      stream.operation(
        typeof type === 'string' && KNOWN_TYPES.has(type) ? type : 'invalid',
        result.ok ? 'ok' : result.error.code,
      );
    });
  }

  /** What an operation changes for this connection: credit back, sessions to close at the end. */
  private observe(queue: Queue, operation: Operation, outcome: Outcome): void {
    if (!outcome.ok) return;
    // By name: a queue deleted and made again is another object with the same deliveries' table.
    const subscriptions = [...this.subscriptions.values()].filter(
      (sub) => sub.queue.name === queue.name,
    );
    switch (operation.type) {
      case 'ack':
        for (const sub of subscriptions) for (const token of operation.tokens) sub.settled(token);
        break;
      case 'nack':
        for (const sub of subscriptions) sub.settled(operation.token);
        break;
      case 'extend': {
        const deadline = outcome.value as number | null;
        for (const sub of subscriptions) {
          if (deadline === null) sub.settled(operation.token);
          else sub.extended(operation.token, deadline);
        }
        break;
      }
      case 'ackUpTo':
      case 'nackUpTo':
        for (const sub of subscriptions) {
          if (sub.session === operation.session) sub.settledUpTo(operation.token);
        }
        break;
      case 'closeSession':
        this.sessions.get(queue.name)?.ids.delete(operation.session);
        for (const sub of subscriptions) {
          if (sub.session === operation.session) sub.settledUpTo(Number.POSITIVE_INFINITY);
        }
        break;
      case 'purgeQueue':
        for (const sub of subscriptions) sub.settledUpTo(Number.POSITIVE_INFINITY);
        break;
      case 'openSession': {
        if (this.ended) {
          // Opened after the connection ended: nobody holds it any more.
          queue.closeSession(outcome.value as string).catch(() => {});
          break;
        }
        let entry = this.sessions.get(queue.name);
        if (entry === undefined) {
          entry = { queue, ids: new Set() };
          this.sessions.set(queue.name, entry);
        }
        entry.ids.add(outcome.value as string);
        break;
      }
    }
  }

  /** `sent`: the `subscribed` answer went out; no push goes before it. */
  private async subscribe(frame: SubscribeFrame, sent: Promise<void>): Promise<ServerFrame> {
    const { services, principal, log } = this.context;
    const { limits, receipts } = services;
    let claimed = false;
    let opened = () => {};
    try {
      if (this.subscriptions.has(frame.id) || this.opening.has(frame.id)) {
        throw new ValidationError(`subscription ${frame.id} exists; use another id`);
      }
      if (this.subscriptions.size + this.opening.size >= limits.maxSubscriptions) {
        throw new ServerError(
          'TOO_MANY_REQUESTS',
          `this connection holds ${limits.maxSubscriptions} subscriptions, the most it may (the server's maxSubscriptions): receiving from more queues, visibilities or sessions at once takes another connection (another open() of the URL)`,
        );
      }
      this.checkPrefetch(frame.prefetch);
      if (frame.visibility !== undefined && frame.visibility > limits.maxVisibilityMs) {
        throw new ValidationError(
          `visibility must be at most ${limits.maxVisibilityMs} ms, got ${frame.visibility} (this server's maxVisibilityMs)`,
        );
      }
      // Before the lookup: a key that may not consume here learns nothing of the queue.
      authorize(principal, 'consume', frame.queue);
      // Held from here, across the lookup's await: subscribes in the same burst see it, and a
      // credit or unsubscribe sent right behind it waits for it (frames run in their order).
      this.opening.set(
        frame.id,
        new Promise<void>((resolve) => {
          opened = resolve;
        }),
      );
      claimed = true;
      const queue = await services.queues.existing(frame.queue);
      if (frame.visibility === undefined) await checkQueueVisibility(queue, limits);
      const session =
        frame.session === undefined ? undefined : receipts.verifySession(queue.name, frame.session);
      const subscription = new Subscription(
        {
          id: frame.id,
          queue,
          prefetch: frame.prefetch,
          maxBatch: limits.maxBatch,
          maxFrameBytes: Math.min(limits.maxBodyBytes, limits.maxStreamBufferBytes),
          visibility: frame.visibility,
          session,
          signer: receipts.forQueue(queue.name),
          log,
        },
        {
          push: (frame, text) => this.push(frame, text),
          backedUp: () => this.backedUp(),
          ended: (sub, error) => this.subscriptionEnded(sub, error),
          now: this.context.now,
        },
        sent,
      );
      if (this.ended || this.shuttingDown) {
        await subscription.close();
        if (this.shuttingDown) throw shuttingDownError();
        throw new ServerError('INTERNAL', 'the connection closed');
      }
      this.subscriptions.set(frame.id, subscription);
      services.metrics.stream.subscriptions(1);
      return {
        type: 'subscribed',
        id: frame.id,
        subscription: frame.id,
        prefetch: frame.prefetch,
      };
    } catch (error) {
      return { type: 'error', id: frame.id, error: refused(error, log).error };
    } finally {
      if (claimed) {
        this.opening.delete(frame.id);
        opened();
      }
    }
  }

  private async credit(frame: CreditFrame): Promise<ServerFrame> {
    try {
      this.checkPrefetch(frame.prefetch);
      const subscription = await this.subscription(frame.subscription);
      subscription.setPrefetch(frame.prefetch);
      return {
        type: 'subscribed',
        id: frame.id,
        subscription: frame.subscription,
        prefetch: frame.prefetch,
      };
    } catch (error) {
      return { type: 'error', id: frame.id, error: refused(error, this.context.log).error };
    }
  }

  private async unsubscribe(frame: UnsubscribeFrame): Promise<ServerFrame> {
    try {
      const subscription = await this.subscription(frame.subscription);
      this.forget(frame.subscription);
      await subscription.close();
      return { type: 'unsubscribed', id: frame.id, subscription: frame.subscription };
    } catch (error) {
      return { type: 'error', id: frame.id, error: refused(error, this.context.log).error };
    }
  }

  /**
   * A queue deleted through this server ends its subscriptions here (`unsubscribed`, NOT_FOUND),
   * even those whose credit is all in use and that would otherwise go on, once their leases
   * ended, to a queue made later under the same name.
   */
  queueDeleted(name: string): void {
    for (const subscription of [...this.subscriptions.values()]) {
      if (subscription.queue.name !== name) continue;
      void subscription.close();
      this.subscriptionEnded(subscription, new NotFoundError(`queue ${name} was deleted`));
    }
  }

  private forget(id: number): void {
    if (this.subscriptions.delete(id)) this.context.services.metrics.stream.subscriptions(-1);
  }

  /** The subscription `id`, once a subscribe of it still being answered has been. */
  private async subscription(id: number): Promise<Subscription> {
    await this.opening.get(id);
    const subscription = this.subscriptions.get(id);
    if (subscription === undefined) {
      // Stopped by the shutdown that began while this frame was on its way.
      if (this.shuttingDown) throw shuttingDownError();
      throw new ValidationError(`no subscription ${id}`);
    }
    return subscription;
  }

  private checkPrefetch(prefetch: number): void {
    const { maxPrefetch } = this.context.services.limits;
    if (prefetch > maxPrefetch) {
      throw new ValidationError(
        `prefetch must be at most ${maxPrefetch}, got ${prefetch} (this server's maxPrefetch)`,
      );
    }
  }

  private subscriptionEnded(subscription: Subscription, error: unknown): void {
    if (this.subscriptions.get(subscription.id) !== subscription) return;
    this.forget(subscription.id);
    const frame: ServerFrame = {
      type: 'unsubscribed',
      subscription: subscription.id,
      error: refused(error, this.context.log).error,
    };
    // After the answers of earlier frames: a subscription that fails at once must not be
    // reported ended before its `subscribed` answer, which the client would then believe.
    this.replies = this.replies.then(() => {
      this.send(frame);
    });
  }

  private refuse(id: number | undefined, error: unknown): void {
    const frame: ServerFrame = {
      type: 'error',
      ...(id === undefined ? {} : { id }),
      error: refused(error, this.context.log).error,
    };
    // In order with the answers of earlier frames.
    this.replies = this.replies.then(() => {
      this.send(frame);
    });
  }

  private push(frame: DeliveriesFrame, text: string): boolean {
    if (this.ended || this.socket.readyState !== this.socket.OPEN) return false;
    this.sendText(text);
    this.context.services.metrics.stream.deliveriesPushed(frame.deliveries.length);
    return true;
  }

  /** Sends a frame, unless the socket is no longer open. */
  private send(frame: ServerFrame): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.sendText(JSON.stringify(frame));
  }

  /** Sends a frame's JSON (the socket is open). */
  private sendText(text: string): void {
    this.socket.send(text);
    if (this.backedUp()) this.watchDrain();
  }

  private backedUp(): boolean {
    return this.socket.bufferedAmount > this.context.services.limits.maxStreamBufferBytes;
  }

  /**
   * A client that does not read fills the server's buffer: pushing and reading stop until it
   * drains, and a connection that stays backed up for two heartbeats is closed.
   */
  private watchDrain(): void {
    this.updateReading();
    if (this.drainTimer !== undefined) return;
    this.backedUpSince ??= Date.now();
    this.drainTimer = setInterval(() => {
      if (this.backedUp()) {
        const limit = 2 * this.context.services.limits.streamHeartbeatMs;
        if (Date.now() - (this.backedUpSince ?? Date.now()) > limit) {
          this.context.log.warn('stream closed: the client did not read what was sent to it');
          void this.close(STREAM_CLOSE.slowConsumer, 'SLOW_CONSUMER', 'slow-consumer');
          this.socket.terminate();
        }
        return;
      }
      clearInterval(this.drainTimer);
      this.drainTimer = undefined;
      this.backedUpSince = undefined;
      this.updateReading();
      for (const subscription of this.subscriptions.values()) subscription.wake();
    }, DRAIN_CHECK_MS);
  }

  private updateReading(): void {
    const pause = this.inFlight >= MAX_FRAMES_IN_FLIGHT || this.backedUp();
    if (pause === this.readingPaused || this.ended) return;
    this.readingPaused = pause;
    if (pause) this.socket.pause();
    else this.socket.resume();
  }

  private beat(): void {
    // While this side does not read (back-pressure), it cannot hear a pong either: a client
    // that does not drain what it was sent is judged by the slow-consumer rule instead.
    if (!this.alive && !this.readingPaused) {
      this.context.log.warn('stream closed: no pong within the heartbeat');
      void this.close(STREAM_CLOSE.heartbeatTimeout, 'HEARTBEAT_TIMEOUT', 'heartbeat-timeout');
      this.socket.terminate();
      return;
    }
    this.alive = false;
    if (this.socket.readyState === this.socket.OPEN) this.socket.ping();
  }

  /** Stops the subscriptions and closes the sessions this connection opened (R12). */
  private end(): Promise<void> {
    this.ending ??= this.finish();
    return this.ending;
  }

  private async finish(): Promise<void> {
    try {
      await this.cleanUp();
    } finally {
      this.markGone();
    }
  }

  private async cleanUp(): Promise<void> {
    this.ended = true;
    clearInterval(this.heartbeat);
    if (this.drainTimer !== undefined) clearInterval(this.drainTimer);
    const subscriptions = [...this.subscriptions.values()];
    for (const subscription of subscriptions) this.forget(subscription.id);
    this.context.services.metrics.stream.connectionEnded(this.endReason);
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
    for (const { queue, ids } of this.sessions.values()) {
      for (const sessionId of ids) {
        try {
          const released = await queue.closeSession(sessionId);
          this.context.log.info(
            { queue: queue.name, released },
            'session closed with its stream connection',
          );
        } catch (error) {
          this.context.log.debug({ err: error, queue: queue.name }, 'session already ended');
        }
      }
    }
    this.sessions.clear();
    this.context.onEnded();
  }
}

function shuttingDownError(): ClosedError {
  return new ClosedError('the server is shutting down');
}
