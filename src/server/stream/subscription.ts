import type { FastifyBaseLogger } from 'fastify';
import type { Queue } from '../../broker/index.js';
import { untilAborted } from '../../broker/on-abort.js';
import { build, type Delivery, SessionClosedError } from '../../core/index.js';
import { type DeliveriesFrame, deliveryToWire, type WireSigner } from '../../wire/index.js';

/** How long one receive of a subscription waits before asking again (it wakes on publish). */
const PUMP_WAIT_MS = 20_000;
/** Credit held by leases that may have expired is re-checked at least this often. */
const EXPIRY_RECHECK_MS = 1000;
/**
 * A subscription whose credit is all in use looks for its session's end at a wake-up of its
 * queue at most this often (ms): the first wake-up after a quiet spell at once, those within
 * this of a look once it is over. Every publish of another server wakes the queue: a look per
 * wake-up was a read per publish and subscription (with ten such subscriptions, the other
 * server's publishes took 2.7 times as long, both servers in one process on 2 cores).
 */
const WAKE_LOOK_MS = 100;

export interface SubscriptionSink {
  /** Sends a push frame as `text` (its JSON); false when the connection is gone (not sent). */
  push(frame: DeliveriesFrame, text: string): boolean;
  /** true while the connection has more unsent bytes than it may queue. */
  backedUp(): boolean;
  /**
   * Whether the first frame of `subscription`'s deliveries may go now: while the connection is
   * not backed up, and while it is, for the subscription that has waited longest for room
   * (having given deliveries back for want of it), once until the connection drains. Otherwise
   * the subscription waits for room, keeping its place.
   */
  mayPush(subscription: Subscription): boolean;
  /** `subscription` waits for room no more: it has nothing to push (no job came, no credit). */
  passed(subscription: Subscription): void;
  /** The subscription ended by itself (its session closed, the storage failed). */
  ended(subscription: Subscription, error: unknown): void;
  /** The broker's time, which lease deadlines are in. */
  now(): number;
}

export interface SubscriptionSettings {
  id: number;
  queue: Queue;
  prefetch: number;
  maxBatch: number;
  /** What one push frame should stay within: deliveries taken at once are sized to fit. */
  maxFrameBytes: number;
  visibility: number | undefined;
  /** The core's session id (the handle is verified by the caller). */
  session: string | undefined;
  /** How often a session's end is looked for while credit is in use (the heartbeat, ms). */
  sessionCheckMs: number;
  signer: WireSigner;
  log: FastifyBaseLogger;
}

/** A pushed delivery not yet settled through the connection. */
interface Pushed {
  /** Its job, to look its lease up by. */
  id: string;
  /** Its lease's end as last known here (at push, or an extend through the connection). */
  deadline: number;
}

/**
 * Pushes a queue's deliveries to one connection as they become ready, never more than
 * `prefetch` unsettled (a prefetch lowered holds back what is reserved after it; what was
 * reserved before is still pushed): a delivery counts until it is acked, nacked or released
 * through this connection, or its lease ends (looked up at the deadline known here, so an
 * extend made elsewhere keeps it counting). Waiting for work is the broker's receive (one owner of
 * wake-ups), so a publish reaches a parked subscription at once.
 */
export class Subscription {
  readonly id: number;
  readonly queue: Queue;
  readonly session: string | undefined;
  private prefetch: number;
  /** Unsettled pushed deliveries by token. Replaced, never changed, so a look-up can tell. */
  private readonly outstanding = new Map<number, Pushed>();
  private readonly stop = new AbortController();
  /** The latest refill (see refill), which close waits for. */
  private refilled: Promise<void> = Promise.resolve();
  private creditReturned: (() => void) | undefined;
  private readonly done: Promise<void>;
  /** Bytes per delivery in the last push; unknown until the first one. */
  private bytesPerDelivery: number | undefined;
  /** The pump waits for credit (not for jobs, not in a receive). */
  private waitingForRoom = false;
  /**
   * Its deliveries went back for want of room and it waits for its turn (SubscriptionSink
   * mayPush): its next receive only looks, not waits, lest it hold the turn while its queue has
   * nothing for it.
   */
  private waitingForTurn = false;
  /** A refill reserved with acks is on its way: the pump lets it push first. */
  private refilling = false;
  /** The pump started (after `opened`). */
  private pumping = false;
  /** When (performance.now()) a session's end is next looked for while credit is in use. */
  private nextSessionCheck: number;
  /**
   * A wake-up of the queue that may tell of its session's end (see Queue.watchWakes) came since
   * its receive last looked: with its credit all in use, it looks for that end.
   */
  private wokenSinceLook = false;
  /** When (performance.now()) a wake-up last made it look for its session's end. */
  private lastWakeLook = Number.NEGATIVE_INFINITY;

  /**
   * `opened`: resolves once the client was told the subscription exists (its `subscribed`
   * answer went out): the first push comes after it, as answers and pushes keep the order of
   * the frames that caused them (an engine that answers at once would otherwise push first).
   */
  constructor(
    private readonly settings: SubscriptionSettings,
    private readonly sink: SubscriptionSink,
    opened: Promise<unknown> = Promise.resolve(),
  ) {
    this.id = settings.id;
    this.queue = settings.queue;
    this.session = settings.session;
    this.prefetch = settings.prefetch;
    this.nextSessionCheck = performance.now() + settings.sessionCheckMs;
    this.done = opened.then(() => {
      this.pumping = true;
      return this.pump();
    });
  }

  get active(): boolean {
    return !this.stop.signal.aborted;
  }

  /** How many pushed deliveries are unsettled (their lease not known to be over). */
  get unsettled(): number {
    return this.outstanding.size;
  }

  setPrefetch(prefetch: number): void {
    this.prefetch = prefetch;
    this.wake();
  }

  /** A delivery of this queue was settled through the connection: its credit comes back. */
  settled(token: number): void {
    if (this.outstanding.delete(token)) this.wake();
  }

  /** A live delivery's lease moved (extend). */
  extended(token: number, deadline: number): void {
    const pushed = this.outstanding.get(token);
    if (pushed !== undefined) this.outstanding.set(token, { id: pushed.id, deadline });
  }

  /** The session's deliveries with a token ≤ `upTo` were settled (ackUpTo, closeSession, …). */
  settledUpTo(upTo: number): void {
    for (const token of this.outstanding.keys()) if (token <= upTo) this.outstanding.delete(token);
    this.wake();
  }

  /** Something may have changed the room to push (buffer drained, prefetch raised). */
  wake(): void {
    const resolve = this.creditReturned;
    this.creditReturned = undefined;
    resolve?.();
  }

  /**
   * The client acked these tokens in a frame now handed to the queue. When the pump waits for
   * credit that they give back, the next deliveries are reserved at once, so they commit with
   * the acks rather than in a transaction of their own after them. They are pushed once the
   * acks are settled and answered (`answered`: the client learns of its acks first), within the
   * credit they were reserved under, as a receive's in flight are: a `credit` that lowered the
   * prefetch meanwhile holds back what is reserved after it, not these (given back, they would
   * cost a storage write and count as unworked, R33, while the client's consumers take what is
   * pushed). Any that credit does not cover (an ack failed) go back at once.
   */
  refill(tokens: readonly number[], answered: Promise<unknown>): void {
    if (!this.waitingForRoom || this.refilling || !this.active || this.sink.backedUp()) return;
    let freed = 0;
    // Each delivery once: a token named twice (in one ack, or in two of the frame) frees one.
    for (const token of new Set(tokens)) if (this.outstanding.has(token)) freed += 1;
    const room = this.prefetch - this.unsettled + freed;
    if (freed === 0 || room <= 0) return;
    const { queue, maxBatch, visibility, session, log } = this.settings;
    const reservedUnder = this.prefetch;
    this.refilling = true;
    const reserved = queue.execute([
      build.reserve({
        max: this.take(room, maxBatch),
        ...(visibility === undefined ? {} : { visibility }),
        ...(session === undefined ? {} : { session }),
      }),
    ]);
    this.refilled = (async () => {
      let deliveries: Delivery[] = [];
      try {
        const [outcome] = await reserved;
        if (outcome?.ok) deliveries = outcome.value as Delivery[];
      } catch (error) {
        log.debug({ err: error, queue: queue.name }, 'refill with acks failed');
      }
      try {
        // Stopped meanwhile (the connection ended, say): they go back now, unworked, not once
        // the answer they wait behind is dropped, after the session the end closes released
        // them as received ones (R12). Not a race with a promise of the stop: each refill would
        // leave a reaction on it for the subscription's life.
        await untilAborted(answered, this.stop.signal);
        // Nothing was pushed meanwhile (the pump waits while refilling): the unsettled only fell.
        const credit = Math.max(reservedUnder, this.prefetch);
        const room = this.active ? Math.max(0, credit - this.unsettled) : 0;
        const { unsent, gone } = this.deliver(deliveries.slice(0, room));
        const why = gone || !this.active ? CLIENT_GONE : NOT_PUSHED;
        await release(queue, [...unsent, ...deliveries.slice(room)], log, why);
      } finally {
        this.refilling = false;
        this.wake();
      }
    })();
  }

  /** It has nothing to push (no job came, no credit): it waits for no turn. */
  private passed(): void {
    this.waitingForTurn = false;
    this.sink.passed(this);
  }

  /**
   * Stops pushing; deliveries already pushed stay leased to the client, and what a refill took
   * but did not push has gone back once this resolves.
   */
  async close(): Promise<void> {
    this.stop.abort();
    this.wake();
    // Not started: it will not, and its `opened` may wait for the caller (a subscribe that is
    // closing it before its answer), so there is nothing to wait for.
    if (this.pumping) await this.done;
    await this.refilled;
  }

  private async pump(): Promise<void> {
    const { queue, session } = this.settings;
    // A session closed elsewhere (over HTTP, by another server) wakes the queue's receivers,
    // which learn of it by looking (R16); one whose credit is all in use runs no receive.
    const unwatch =
      session === undefined
        ? undefined
        : queue.watchWakes?.(() => {
            this.wokenSinceLook = true;
            this.wake();
          });
    try {
      await this.pumpUntilStopped();
    } finally {
      unwatch?.();
    }
  }

  private async pumpUntilStopped(): Promise<void> {
    const { queue, maxBatch, visibility, session, log } = this.settings;
    while (this.active) {
      if (this.leaseDue()) await this.recheckLeases();
      const room = this.prefetch - this.unsettled;
      if (room <= 0) this.passed();
      if (room <= 0 || this.refilling || this.sink.backedUp()) {
        // No receive runs now, which would notice that the session ended: look for it, within
        // each heartbeat, and at once when a wake-up of the queue may tell of it.
        if (session !== undefined && room <= 0) {
          const now = performance.now();
          const due = now >= this.nextSessionCheck;
          if (due || (this.wokenSinceLook && now >= this.lastWakeLook + WAKE_LOOK_MS)) {
            if (this.wokenSinceLook) this.lastWakeLook = now;
            this.wokenSinceLook = false;
            if (await this.sessionEnded(due)) this.end(new SessionClosedError(session));
            continue;
          }
        }
        this.waitingForRoom = true;
        await this.waitForRoom();
        this.waitingForRoom = false;
        continue;
      }
      // Its look sees a session closed before it; a wake-up that comes after it is news.
      this.wokenSinceLook = false;
      let deliveries: Delivery[];
      try {
        deliveries = await queue.receive({
          max: this.take(room, maxBatch),
          // One that waits for its turn gives it up at once when nothing is ready for it: else
          // it kept the turn from the others for the whole wait, theirs given back at each drain.
          wait: this.waitingForTurn ? 0 : PUMP_WAIT_MS,
          signal: this.stop.signal,
          ...(visibility === undefined ? {} : { visibility }),
          ...(session === undefined ? {} : { session }),
        });
      } catch (error) {
        this.end(error);
        return;
      }
      if (deliveries.length === 0) this.passed();
      const { unsent, gone } = this.deliver(deliveries);
      await release(queue, unsent, log, gone ? CLIENT_GONE : NOT_PUSHED);
      if (gone) return;
    }
  }

  /**
   * Pushes deliveries, counted against the credit, in frames of at most `maxFrameBytes` (one
   * delivery whatever its size). Each frame, the first too, goes only while the connection is
   * not backed up: a receive that waited while the buffer filled (another subscription's
   * pushes) would otherwise add its frame past the bound, one per subscription. The first may
   * go when it is this subscription's turn (SubscriptionSink.mayPush): else another whose
   * pushes fill the buffer again as it drains would push every time, and this one give its
   * deliveries back every time. `unsent` are what is left, or everything when the connection
   * is `gone`, for the caller to give back.
   */
  private deliver(deliveries: Delivery[]): { unsent: Delivery[]; gone: boolean } {
    const { queue, signer, log, maxFrameBytes } = this.settings;
    const wire = deliveries.map((delivery) => deliveryToWire(delivery, signer));
    // Each delivery is serialized once, when first weighed, and frames are joined from those
    // texts: sizing frames by re-serializing what is left was quadratic in the bytes pushed
    // and held the event loop for seconds on large payloads.
    const texts: string[] = [];
    const sizes: number[] = [];
    const weigh = (index: number): number => {
      let size = sizes[index];
      if (size === undefined) {
        const text = JSON.stringify(wire[index]);
        texts[index] = text;
        // Bytes, as maxFrameBytes and the socket count them (é is 2, 中 3).
        size = Buffer.byteLength(text);
        sizes[index] = size;
      }
      return size;
    };
    let start = 0;
    while (start < deliveries.length) {
      if (start === 0) {
        this.waitingForTurn = !this.sink.mayPush(this);
        if (this.waitingForTurn) break;
      } else if (this.sink.backedUp()) break;
      const now = this.sink.now();
      // The frame without its deliveries; `deliveries` is its last key, so its JSON ends in
      // `[]}` and the deliveries' texts go between the brackets, as JSON.stringify puts them.
      const envelope = JSON.stringify({
        type: 'deliveries',
        subscription: this.id,
        now,
        deliveries: [],
      } satisfies DeliveriesFrame);
      // As many as fit, in order (commas between them), and at least one.
      let bytes = Buffer.byteLength(envelope);
      let end = start;
      while (end < deliveries.length) {
        const next = bytes + weigh(end) + (end > start ? 1 : 0);
        if (next > maxFrameBytes && end > start) break;
        bytes = next;
        end += 1;
      }
      const frame: DeliveriesFrame = {
        type: 'deliveries',
        subscription: this.id,
        now,
        deliveries: start === 0 && end === wire.length ? wire : wire.slice(start, end),
      };
      const text = `${envelope.slice(0, -2)}${texts.slice(start, end).join(',')}${envelope.slice(-2)}`;
      if (!this.active || !this.sink.push(frame, text)) {
        return { unsent: deliveries.slice(start), gone: true };
      }
      this.bytesPerDelivery = bytes / (end - start);
      for (let index = start; index < end; index++) {
        const delivery = deliveries[index] as Delivery;
        this.outstanding.set(delivery.token, { id: delivery.id, deadline: delivery.deadline });
        log.info(
          { queue: queue.name, jobId: delivery.id, token: delivery.token, subscription: this.id },
          'delivered',
        );
      }
      start = end;
    }
    return { unsent: deliveries.slice(start), gone: false };
  }

  /**
   * How many deliveries the next receive takes: the room the prefetch leaves, at most a batch,
   * and no more than one frame holds at the size of the last ones. Until a push shows that
   * size, all the room: a waiting receive of `max` jobs gets them in one frame, as in-process
   * (deliver splits a frame of large payloads and gives back what the buffer bound leaves).
   */
  private take(room: number, maxBatch: number): number {
    const fit =
      this.bytesPerDelivery === undefined
        ? maxBatch
        : Math.max(1, Math.floor(this.settings.maxFrameBytes / this.bytesPerDelivery));
    return Math.min(room, maxBatch, fit);
  }

  /**
   * Until credit comes back, the connection drains, the subscription ends, a lease may end or
   * the session's end is to be looked for.
   */
  private waitForRoom(): Promise<void> {
    return new Promise((resolve) => {
      let next = Number.POSITIVE_INFINITY;
      for (const { deadline } of this.outstanding.values()) next = Math.min(next, deadline);
      let delay = Math.min(next - this.sink.now(), EXPIRY_RECHECK_MS);
      if (this.session !== undefined) {
        delay = Math.min(delay, this.nextSessionCheck - performance.now());
        // A wake-up that came too soon after the last look it made: looked at once that is over.
        if (this.wokenSinceLook && this.prefetch - this.unsettled <= 0) {
          delay = Math.min(delay, this.lastWakeLook + WAKE_LOOK_MS - performance.now());
        }
      }
      const timer = setTimeout(() => this.wake(), Math.max(1, delay));
      this.creditReturned = () => {
        clearTimeout(timer);
        resolve();
      };
      if (!this.active) this.wake();
    });
  }

  /** The subscription ended by itself: it stops, and the connection tells the client why. */
  private end(error: unknown): void {
    if (!this.active) return;
    this.stop.abort();
    this.sink.ended(this, error);
  }

  private leaseDue(): boolean {
    const now = this.sink.now();
    for (const { deadline } of this.outstanding.values()) if (deadline <= now) return true;
    return false;
  }

  /**
   * Deliveries past the deadline known here: the credit of those whose lease is over comes
   * back; those still live were extended elsewhere (over HTTP, another connection) and count
   * on until their new deadline. One that cannot be looked up counts as over, as before.
   */
  private async recheckLeases(): Promise<void> {
    const { queue, log } = this.settings;
    const now = this.sink.now();
    const due = [...this.outstanding].filter(([, pushed]) => pushed.deadline <= now);
    const leases = await Promise.all(
      due.map(async ([token, pushed]) => {
        try {
          const job = await queue.job(pushed.id);
          return job?.state === 'active' && job.token === token ? job.deadline : undefined;
        } catch (error) {
          log.debug({ err: error, queue: queue.name }, 'could not look up a pushed delivery');
          return undefined;
        }
      }),
    );
    due.forEach(([token, pushed], index) => {
      // Settled or extended through the connection meanwhile: that stands.
      if (this.outstanding.get(token) !== pushed) return;
      const deadline = leases[index];
      if (deadline !== undefined && deadline > this.sink.now()) {
        this.outstanding.set(token, { id: pushed.id, deadline });
      } else {
        this.outstanding.delete(token);
      }
    });
  }

  /**
   * Whether the subscription's session ended elsewhere (closed over HTTP or by a connection of
   * another server, or timed out): its deliveries were released then, as their job's history
   * says. With `applyDue` (once per `sessionCheckMs`), a stats operation first applies the
   * timeouts that are due (R3), which on a quiet queue nothing else would; a look at a wake-up
   * only reads, what woke it having ended the session if anything did.
   */
  private async sessionEnded(applyDue: boolean): Promise<boolean> {
    const { queue, log, sessionCheckMs } = this.settings;
    if (applyDue) this.nextSessionCheck = performance.now() + sessionCheckMs;
    try {
      if (applyDue) await queue.execute([build.stats()]);
      const over: [number, Pushed][] = [];
      for (const [token, pushed] of [...this.outstanding]) {
        const job = await queue.job(pushed.id);
        if (job?.state === 'active' && job.token === token) return false;
        const released = job?.history.some(
          (attempt) => attempt.token === token && attempt.outcome === 'session-ended',
        );
        if (released === true) return true;
        over.push([token, pushed]);
      }
      // Every pushed delivery ended otherwise (settled elsewhere, over HTTP or another
      // connection): none tells whether the session ended, and none holds credit any more. Given
      // back, the next receive in the session finds out (SESSION_CLOSED), or pushes as it may.
      for (const [token, pushed] of over) {
        if (this.outstanding.get(token) === pushed) this.outstanding.delete(token);
      }
    } catch (error) {
      log.debug({ err: error, queue: queue.name }, 'could not look for the end of a session');
    }
    return false;
  }
}

/** What the log says of a release: the connection was gone, or the job was never pushed. */
export const CLIENT_GONE = 'released, client gone';
export const NOT_PUSHED = 'released, not pushed';

/**
 * Deliveries reserved for a connection that is gone (or past its credit, or its buffer full) go
 * back at once, not at lease end, and unworked: nobody received them (R33).
 */
export async function release(
  queue: Queue,
  deliveries: readonly Pick<Delivery, 'id' | 'token'>[],
  log: FastifyBaseLogger,
  why: typeof CLIENT_GONE | typeof NOT_PUSHED,
) {
  if (deliveries.length === 0) return;
  try {
    await queue.execute(build.giveBack(deliveries.map((delivery) => delivery.token)));
    for (const delivery of deliveries) {
      log.info({ queue: queue.name, jobId: delivery.id, token: delivery.token }, why);
    }
  } catch (error) {
    log.warn({ err: error, queue: queue.name }, 'could not release deliveries of a closed stream');
  }
}
