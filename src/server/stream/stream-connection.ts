import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Queue } from '../../broker/index.js';
import {
  ClosedError,
  NotFoundError,
  OPERATION_TYPES,
  type Operation,
  type Outcome,
  SessionClosedError,
  sessionOf,
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
  type WireDelivery,
  type WireOutcome,
} from '../../wire/index.js';
import type { Principal } from '../auth.js';
import { authorize, authorizeAny } from '../auth.js';
import { ServerError } from '../errors.js';
import { checkJsonBody, checkQueueVisibility } from '../limits.js';
import type { StreamEndReason } from '../metrics.js';
import { refused, runOperations } from '../operation-runner.js';
import type { Services } from '../route.js';
import { CLIENT_GONE, NOT_PUSHED, release, Subscription } from './subscription.js';

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
  /**
   * A session was closed through this connection, or a subscription of it found it ended:
   * subscriptions in it end, on every connection.
   */
  sessionClosed(queue: string, session: string): void;
}

/** What `read` makes of a message: a frame, or why it is none. */
type Read =
  | { frame: ClientFrame }
  | { frame?: undefined; id: number | undefined; error: unknown; json: boolean };

/** A batch frame waiting to run (see roomToRun). */
interface WaitingFrame {
  /** The deliveries its reserves ask for. */
  asked: number;
  /** Lets it run; false: the connection ended, it must not. */
  start(run: boolean): void;
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
  /** Frames read while MAX_FRAMES_IN_FLIGHT ran, waiting for room, in the order they came. */
  private readonly held: Read[] = [];
  /** Batch frames waiting for room to run, in the order they came. */
  private readonly waitingToRun: WaitingFrame[] = [];
  /** The deliveries asked for by the reserves of the batch frames running now. */
  private reserving = 0;
  /** Resolves once the last batch frame has handed its operations to the storage (or none). */
  private handedOver: Promise<void> = Promise.resolve();
  /** Bytes of answers made but not yet handed to the socket (reserved deliveries). */
  private owedBytes = 0;
  /** Batch frames with reserves being run: the end of the connection waits for them (cleanUp). */
  private readonly reservesRunning = new Set<Promise<unknown>>();
  /** Deliveries kept for answers not yet out: given back if they never go (see fitToRoom). */
  private readonly unanswered = new Set<{ queue: Queue; deliveries: WireDelivery[] }>();
  private readingPaused = false;
  private alive = true;
  private ended = false;
  private backedUpSince: number | undefined;
  /**
   * Subscriptions that gave deliveries back for want of room, the longest waiting first: each
   * time the connection is backed up, the first of them may push one frame (see mayPush).
   */
  private readonly waitingForRoom = new Set<Subscription>();
  /** That frame went since the connection last drained. */
  private turnTaken = false;
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
        maxJsonDepth: limits.maxJsonDepth,
      },
    });
  }

  /**
   * Bytes came from the client: a sign of life, as a whole frame or a pong is. A large frame
   * over a slow link takes longer than a heartbeat to come whole, and the client's pong waits
   * behind it.
   */
  heard(): void {
    this.alive = true;
  }

  /**
   * Ends the connection with a close code (shutdown, slow consumer). Its subscriptions stop and
   * its sessions close now, not at the end of the close handshake: at shutdown the storage
   * closes next, and a session left open would hold its deliveries until their deadlines.
   */
  close(code: number, reason: string, why: StreamEndReason = 'shutdown'): Promise<void> {
    if (this.endReason === 'client') this.endReason = why;
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(code, reason);
    // The close frame goes out behind what is queued, and nothing more is queued after it (the
    // socket is no longer open). Reading again lets the peer's close frame end the handshake;
    // frames that come meanwhile are not run. A peer that does not answer it is cut.
    this.socket.resume();
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
    const read = this.read(data, isBinary);
    // Counted whenever it came, so that the metrics agree with what arrived.
    this.context.services.metrics.stream.frameReceived(
      read.frame === undefined ? 'invalid' : read.frame.type,
    );
    // Came after the close began: not run, and no answer could go out.
    if (this.ending !== undefined) return;
    // Pausing the socket stops its reads, not the frames of a chunk it has read (one read holds
    // up to 64 KiB: hundreds of small frames). Those past the bound wait here, in their order.
    if (this.inFlight >= MAX_FRAMES_IN_FLIGHT || this.held.length > 0) {
      this.held.push(read);
      return;
    }
    this.run(read);
  }

  /** Runs a frame that was read (or refuses it), its answer behind those of the frames before. */
  private run(read: Read): void {
    if (read.frame === undefined) {
      // JSON but not a frame, during shutdown: CLOSED, as a frame would be answered.
      this.refuse(read.id, read.json && this.shuttingDown ? shuttingDownError() : read.error);
      return;
    }
    const { frame } = read;
    if (this.shuttingDown) {
      // As HTTP answers a request that comes during shutdown: 503 CLOSED, nothing done.
      this.refuse(frame.id, shuttingDownError());
      return;
    }
    let answered!: (delivered: boolean) => void;
    const sent = new Promise<boolean>((resolve) => {
      answered = resolve;
    });
    this.track(this.answer(frame, sent), answered);
  }

  /**
   * A message as a frame, or why it is none: `json` when it was JSON text, `id` the frame's when
   * it has a readable one.
   */
  private read(data: unknown, isBinary: boolean): Read {
    let value: unknown;
    let text: string;
    try {
      if (isBinary) throw new ValidationError('frames are JSON text, not binary');
      text = String(data);
      value = JSON.parse(text);
    } catch (error) {
      const refusal =
        error instanceof ValidationError ? error : new ValidationError('a frame must be JSON text');
      return { id: undefined, error: refusal, json: false };
    }
    try {
      // With its text: a number JSON.parse changed (1e-400 read as 0) is seen only there.
      checkJsonBody(value, this.context.services.limits.maxJsonDepth, 'refuse', text);
      return { frame: clientFrameFromWire(value) };
    } catch (error) {
      return { id: frameId(value), error, json: true };
    }
  }

  /**
   * `sent`: resolves once the answer has gone out, or was dropped (false) as the connection
   * had closed. Async, so that whatever one frame throws becomes its error frame, never an
   * exception in the socket's listener (which ends the process).
   */
  private async answer(frame: ClientFrame, sent: Promise<boolean>): Promise<ServerFrame> {
    switch (frame.type) {
      case 'batch': {
        const asked = deliveriesAsked(frame.operations, this.context.services.limits.maxBatch);
        const answer = this.batch(frame, sent, asked);
        if (asked > 0) {
          this.reservesRunning.add(answer);
          const done = () => this.reservesRunning.delete(answer);
          answer.then(done, done);
        }
        return answer;
      }
      case 'subscribe':
        return this.subscribe(frame, sent);
      case 'credit':
        return this.credit(frame);
      case 'unsubscribe':
        return this.unsubscribe(frame);
    }
  }

  /** Runs the frames held back by the bound on frames in flight, in order, as room comes. */
  private runHeld(): void {
    while (this.ending === undefined && this.inFlight < MAX_FRAMES_IN_FLIGHT) {
      const read = this.held.shift();
      if (read === undefined) return;
      this.run(read);
    }
  }

  /** Answers go out in the order the frames came in; many frames in flight pause reading. */
  private track(answer: Promise<ServerFrame>, answered: (delivered: boolean) => void): void {
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
      let delivered = false;
      try {
        delivered = this.send(await settled);
      } finally {
        answered(delivered);
        this.inFlight -= 1;
        this.runHeld();
        this.updateReading();
      }
    });
  }

  /** `asked`: the deliveries its reserves ask for (deliveriesAsked). */
  private async batch(
    frame: BatchFrame,
    sent: Promise<boolean>,
    asked: number,
  ): Promise<ServerFrame> {
    const { services, principal, log } = this.context;
    // Takes its place before any await: frames start in the order they came.
    const admitted = this.roomToRun(asked);
    // And hand their operations to the storage in that order, whatever their checks await (a
    // reserve naming no visibility reads the queue's): a publish sent behind a reserve must not
    // run before it.
    const turn = this.handedOver;
    let handOver!: () => void;
    const handed = new Promise<void>((resolve) => {
      handOver = resolve;
    });
    // Behind the frames before it too, should it be refused before its turn came.
    this.handedOver = turn.then(() => handed);
    try {
      // Never sent: the connection is gone.
      if (!(await admitted)) throw new ClosedError('the connection closed');
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
          turn,
        },
        frame.operations,
        ({ operation, outcome }) => this.observe(queue, operation, outcome),
        (operations) => {
          this.refill(queue, operations, sent);
          handOver();
        },
      );
      this.count(frame.operations, results);
      await this.fitToRoom(queue, frame.operations, results, sent);
      return { type: 'results', id: frame.id, results };
    } catch (error) {
      return { type: 'error', id: frame.id, error: refused(error, log).error };
    } finally {
      // Refused before the storage, or failed: the frames behind it go on.
      handOver();
      this.reserving -= asked;
      this.startWaiting();
    }
  }

  /**
   * Resolves once a batch frame may run, the frames before it first: when the connection is
   * not backed up (what it has queued, and what earlier answers owe, is within
   * maxStreamBufferBytes) and, for a frame that reserves, when the frames reserving now ask with
   * it for at most maxBatch deliveries (or none does: it runs alone). So answers do not pile up
   * for a client that does not read, and what reserves hold in memory at once is bounded. The
   * frames waiting are bounded by those in flight (MAX_FRAMES_IN_FLIGHT). False when the
   * connection ended meanwhile: the frame must not run.
   */
  private roomToRun(asked: number): Promise<boolean> {
    return new Promise((resolve) => {
      this.waitingToRun.push({ asked, start: resolve });
      this.startWaiting();
    });
  }

  /** Starts the waiting batch frames that may run now, in their order (see roomToRun). */
  private startWaiting(): void {
    const { maxBatch, maxStreamBufferBytes } = this.context.services.limits;
    for (let next = this.waitingToRun[0]; next !== undefined; next = this.waitingToRun[0]) {
      if (!this.ended) {
        if (this.socket.bufferedAmount + this.owedBytes > maxStreamBufferBytes) {
          // Started again once it drains, or closed as a slow consumer; or as answers go out.
          if (this.backedUp()) this.watchDrain();
          return;
        }
        if (next.asked > 0 && this.reserving > 0 && this.reserving + next.asked > maxBatch) return;
      }
      this.waitingToRun.shift();
      this.reserving += next.asked;
      next.start(!this.ended);
    }
  }

  /**
   * Keeps, of the deliveries the frame's reserves took, those that fit in the room
   * maxStreamBufferBytes leaves (less what the connection has queued and earlier answers owe;
   * the first one whatever its size), and gives the others back at once, unworked (R33), as
   * pushes do: a reserve answers at most `max` jobs, and no answer queues much more than the
   * bound for a client; all of them when the connection closed while the frame ran, as its
   * answer cannot go out. An auto-ack reserve's (`ack: 'auto'`) are no longer in the queue: all
   * kept. The bytes kept are owed until the answer has gone out (`sent`); those kept are given
   * back too when the answer is dropped, the connection having closed while it waited behind
   * the answers of earlier frames.
   */
  private async fitToRoom(
    queue: Queue,
    inputs: readonly unknown[],
    results: WireOutcome[],
    sent: Promise<boolean>,
  ): Promise<void> {
    const room =
      this.context.services.limits.maxStreamBufferBytes -
      this.socket.bufferedAmount -
      this.owedBytes;
    let bytes = 0;
    let keptAny = false;
    // Closed meanwhile: this answer can never go out, so nobody holds what its reserves took.
    const gone = this.ended || this.socket.readyState !== this.socket.OPEN;
    let full = gone;
    const unsent: WireDelivery[] = [];
    results.forEach((result, index) => {
      const input = inputs[index] as { type?: unknown; ack?: unknown };
      if (!result.ok || input.type !== 'reserve') return;
      const deliveries = result.value as WireDelivery[];
      if (input.ack === 'auto') {
        for (const delivery of deliveries) bytes += Buffer.byteLength(JSON.stringify(delivery)) + 1;
        return;
      }
      let kept = 0;
      for (; !full && kept < deliveries.length; kept++) {
        // Bytes, as bufferedAmount counts them.
        const size = Buffer.byteLength(JSON.stringify(deliveries[kept])) + 1;
        full = bytes + size > room && (keptAny || room <= 0);
        if (full) break;
        bytes += size;
        keptAny = true;
      }
      if (kept === deliveries.length) return;
      unsent.push(...deliveries.slice(kept));
      results[index] = { ok: true, value: deliveries.slice(0, kept) };
    });
    // Owed from now, not after the give-back: frames answered meanwhile leave room for it.
    this.owedBytes += bytes;
    const owed = { queue, deliveries: leased(inputs, results) };
    if (owed.deliveries.length > 0) this.unanswered.add(owed);
    void sent.then((delivered) => {
      this.owedBytes -= bytes;
      this.startWaiting();
      // Dropped: nobody received what its reserves kept, leased until their deadlines (unless
      // the end of the connection gave them back already).
      if (this.unanswered.delete(owed) && !delivered) {
        void release(queue, owed.deliveries, this.context.log, CLIENT_GONE);
      }
    });
    await release(queue, unsent, this.context.log, gone ? CLIENT_GONE : NOT_PUSHED);
  }

  /**
   * Acks of pushed deliveries give their credit back: the queue's subscriptions that wait for
   * it reserve their next deliveries now, in the storage unit of those acks (one commit for
   * both), to push once the acks are settled and answered (`answered`).
   */
  private refill(queue: Queue, operations: readonly Operation[], answered: Promise<unknown>): void {
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
    if (!outcome.ok) {
      // A session the storage ended (its heartbeat or ack timeout, a close over another
      // connection) is not closed again at the end of this one, nor kept until then.
      const session = sessionOf(operation);
      if (outcome.error instanceof SessionClosedError && session !== undefined) {
        this.forgetSession(queue.name, session);
      }
      return;
    }
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
        this.forgetSession(queue.name, operation.session);
        this.context.sessionClosed(queue.name, operation.session);
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
  private async subscribe(frame: SubscribeFrame, sent: Promise<unknown>): Promise<ServerFrame> {
    const { services, principal, log } = this.context;
    const { limits, receipts } = services;
    let claimed = false;
    let opened = () => {};
    try {
      // Behind a subscribe of the same id still being answered, and the frames that wait for it
      // (an unsubscribe of it frees the id): frames run in the order they came.
      for (
        let pending = this.opening.get(frame.id);
        pending !== undefined;
        pending = this.opening.get(frame.id)
      ) {
        await pending;
      }
      if (this.subscriptions.has(frame.id)) {
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
          sessionCheckMs: limits.streamHeartbeatMs,
          signer: receipts.forQueue(queue.name),
          log,
        },
        {
          push: (frame, text) => this.push(frame, text),
          backedUp: () => this.backedUp(),
          mayPush: (sub) => this.mayPush(sub),
          passed: (sub) => this.waitingForRoom.delete(sub),
          ended: (sub, error) => this.subscriptionEndedByItself(sub, error),
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
      await this.withSubscription(frame.subscription, (subscription) =>
        subscription.setPrefetch(frame.prefetch),
      );
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
      const subscription = await this.withSubscription(frame.subscription, (subscription) => {
        this.forget(frame.subscription);
        return subscription;
      });
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

  /**
   * A session closed through a connection of this server (a closeSession, a connection that
   * ended), or found ended by one of its subscriptions, ends its subscriptions here at once
   * (`unsubscribed`, SESSION_CLOSED), even those whose credit is all in use. A session that ends
   * otherwise is noticed by the subscription (Subscription: a wake-up of its queue, a look within
   * each heartbeat).
   */
  sessionClosed(name: string, session: string): void {
    for (const subscription of [...this.subscriptions.values()]) {
      if (subscription.queue.name !== name || subscription.session !== session) continue;
      void subscription.close();
      this.subscriptionEnded(subscription, new SessionClosedError(session));
    }
  }

  private forgetSession(queue: string, session: string): void {
    const entry = this.sessions.get(queue);
    if (entry === undefined) return;
    entry.ids.delete(session);
    if (entry.ids.size === 0) this.sessions.delete(queue);
  }

  private forget(id: number): void {
    const subscription = this.subscriptions.get(id);
    if (subscription === undefined) return;
    this.subscriptions.delete(id);
    this.waitingForRoom.delete(subscription);
    this.context.services.metrics.stream.subscriptions(-1);
  }

  /**
   * Runs `act` on the subscription `id`, once a subscribe of it still being answered has been.
   * The look-up and `act` run in one turn, with no await between them, and at once when no
   * subscribe is pending: the frames behind this one see what it did (two unsubscribes in a
   * row, a credit behind an unsubscribe, a subscribe reusing the id of one just ended).
   */
  private async withSubscription<T>(
    id: number,
    act: (subscription: Subscription) => T,
  ): Promise<T> {
    for (
      let opening = this.opening.get(id);
      opening !== undefined;
      opening = this.opening.get(id)
    ) {
      await opening;
    }
    const subscription = this.subscriptions.get(id);
    if (subscription === undefined) {
      // Stopped by the shutdown that began while this frame was on its way.
      if (this.shuttingDown) throw shuttingDownError();
      throw new ValidationError(`no subscription ${id}`);
    }
    return act(subscription);
  }

  private checkPrefetch(prefetch: number): void {
    const { maxPrefetch } = this.context.services.limits;
    if (prefetch > maxPrefetch) {
      throw new ValidationError(
        `prefetch must be at most ${maxPrefetch}, got ${prefetch} (this server's maxPrefetch)`,
      );
    }
  }

  /**
   * A subscription ended by itself. One that found its session ended (its receive refused, its
   * look for the session's end) takes the session's other subscriptions on this server with it:
   * nothing else may tell them soon (a session that timed out wakes no receiver), and their
   * clients would hand out what they hold of a session that has ended (R16).
   */
  private subscriptionEndedByItself(subscription: Subscription, error: unknown): void {
    this.subscriptionEnded(subscription, error);
    if (error instanceof SessionClosedError && subscription.session !== undefined) {
      this.context.sessionClosed(subscription.queue.name, subscription.session);
    }
  }

  private subscriptionEnded(subscription: Subscription, error: unknown): void {
    if (this.subscriptions.get(subscription.id) !== subscription) return;
    this.forget(subscription.id);
    if (error instanceof SessionClosedError && subscription.session !== undefined) {
      this.forgetSession(subscription.queue.name, subscription.session);
    }
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
    // In order with the answers of earlier frames, and so, waiting behind them, counted among
    // the frames in flight: else refused frames sent behind one that runs long were read and
    // their answers queued without bound. Not at shutdown: the close goes out once the frames
    // being run are answered, after the refusals queued by then (shutdownTimeoutMs bounds it).
    if (!this.shuttingDown) {
      this.track(Promise.resolve(frame), () => {});
      return;
    }
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

  /** Sends a frame, unless the socket is no longer open: false then. */
  private send(frame: ServerFrame): boolean {
    if (this.socket.readyState !== this.socket.OPEN) return false;
    this.sendText(JSON.stringify(frame));
    return true;
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
   * Whether a subscription's first frame of deliveries may go (SubscriptionSink.mayPush). Not
   * backed up, it may. Backed up, only the subscription that has waited longest for room may,
   * once until the connection drains: else, the drained connection waking its subscriptions in
   * one order, the one whose receive is answered first would back it up again every time, and
   * the others give theirs back every time, for as long as it had jobs (R33).
   */
  private mayPush(subscription: Subscription): boolean {
    // One that ended pushes nothing (it sees that itself), and takes no place.
    if (!this.backedUp() || this.subscriptions.get(subscription.id) !== subscription) {
      this.waitingForRoom.delete(subscription);
      return true;
    }
    const [first] = this.waitingForRoom;
    if (first === subscription && !this.turnTaken) {
      this.turnTaken = true;
      // Out of the line (as the subscription sees itself): the others' are the next turns, and
      // it joins behind them when it gives deliveries back again.
      this.waitingForRoom.delete(subscription);
      return true;
    }
    this.waitingForRoom.add(subscription);
    return false;
  }

  /**
   * A client that does not read fills the server's buffer: pushing, reading and starting batch
   * frames stop until it drains, and a connection that stays backed up for two heartbeats is
   * closed.
   */
  private watchDrain(): void {
    this.updateReading();
    if (this.drainTimer !== undefined) return;
    this.backedUpSince ??= performance.now();
    this.drainTimer = setInterval(() => {
      if (this.backedUp()) {
        const limit = 2 * this.context.services.limits.streamHeartbeatMs;
        if (performance.now() - (this.backedUpSince ?? performance.now()) > limit) {
          this.context.log.warn('stream closed: the client did not read what was sent to it');
          // Not cut: the client sees 4008 once it reads up to the close frame (see close).
          void this.close(STREAM_CLOSE.slowConsumer, 'SLOW_CONSUMER', 'slow-consumer');
        }
        return;
      }
      clearInterval(this.drainTimer);
      this.drainTimer = undefined;
      this.backedUpSince = undefined;
      this.turnTaken = false;
      this.updateReading();
      this.startWaiting();
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
    // Frames held back are not run: their connection is gone.
    this.held.length = 0;
    clearInterval(this.heartbeat);
    if (this.drainTimer !== undefined) clearInterval(this.drainTimer);
    // Frames waiting to run do not: their connection is gone.
    this.startWaiting();
    const subscriptions = [...this.subscriptions.values()];
    for (const subscription of subscriptions) this.forget(subscription.id);
    this.context.services.metrics.stream.connectionEnded(this.endReason);
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
    // The reserves being run come back from the storage, and what they took for answers that
    // cannot go out now goes back unworked (R33), before the sessions close: closed first, they
    // would release those deliveries as received ones (R12), counted toward maxDeliveries.
    await Promise.all(this.reservesRunning);
    const unanswered = [...this.unanswered];
    this.unanswered.clear();
    await Promise.all(
      unanswered.map(({ queue, deliveries }) =>
        release(queue, deliveries, this.context.log, CLIENT_GONE),
      ),
    );
    // Together, not one after the other: the storage takes them in shared commits, so a
    // connection with many sessions releases their deliveries at once too (R12). At most maxBatch
    // at a time: the storage runs its calls in order, and thousands sent at once held every other
    // call on their queues behind all of them (10,000 on PostgreSQL: 5.6 s).
    const toClose = [...this.sessions.values()].flatMap(({ queue, ids }) =>
      [...ids].map((sessionId) => ({ queue, sessionId })),
    );
    this.sessions.clear();
    let taken = 0;
    const closeNext = async (): Promise<void> => {
      for (let next = toClose[taken++]; next !== undefined; next = toClose[taken++]) {
        const { queue, sessionId } = next;
        try {
          const released = await queue.closeSession(sessionId);
          this.context.sessionClosed(queue.name, sessionId);
          this.context.log.info(
            { queue: queue.name, released },
            'session closed with its stream connection',
          );
        } catch (error) {
          this.context.log.debug({ err: error, queue: queue.name }, 'session already ended');
        }
      }
    };
    const closers = Math.min(toClose.length, this.context.services.limits.maxBatch);
    await Promise.all(Array.from({ length: closers }, closeNext));
    this.context.onEnded();
  }
}

function shuttingDownError(): ClosedError {
  return new ClosedError('the server is shutting down');
}

/** The deliveries a batch's answer holds under a lease: its reserves' but auto-ack ones. */
function leased(inputs: readonly unknown[], results: readonly WireOutcome[]): WireDelivery[] {
  return results.flatMap((result, index) => {
    const input = inputs[index] as { type?: unknown; ack?: unknown };
    if (!result.ok || input.type !== 'reserve' || input.ack === 'auto') return [];
    return result.value as WireDelivery[];
  });
}

/** The deliveries a batch's reserves ask for, each at most maxBatch (a larger one is refused). */
function deliveriesAsked(operations: readonly unknown[], maxBatch: number): number {
  let asked = 0;
  for (const operation of operations) {
    const { type, max } = (operation ?? {}) as { type?: unknown; max?: unknown };
    if (type !== 'reserve') continue;
    asked +=
      typeof max === 'number' && Number.isSafeInteger(max) && max > 0 ? Math.min(max, maxBatch) : 1;
  }
  return asked;
}
