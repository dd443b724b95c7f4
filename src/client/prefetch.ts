import { onAbort, untilAborted } from '../broker/on-abort.js';
import type {
  DeliveriesFrame,
  ServerFrame,
  UnsubscribedFrame,
  WireDelivery,
} from '../wire/index.js';
import { ConnectionLostError, errorFromWire, STREAM_CONNECTION_LOST } from './errors.js';
import { type LongTimeout, setLongTimeout } from './long-timeout.js';
import type { PushListener, StreamLink } from './stream-link.js';

export interface Waiter {
  max: number;
  resolve(deliveries: WireDelivery[]): void;
  reject(error: unknown): void;
}

/** How long each delivery handed out had been held, pushed ahead with its lease running. */
const heldAges = new WeakMap<WireDelivery, number>();

/**
 * The subscription (its id on the connection) each delivery was pushed to: the server counts a
 * delivery against that subscription's prefetch alone, not against one opened after it.
 */
const pushedTo = new WeakMap<WireDelivery, number>();

/** How long `delivery` waited in a subscription's buffer before a receive took it (ms). */
export function heldFor(delivery: WireDelivery): number {
  return heldAges.get(delivery) ?? 0;
}

/** Held deliveries are given back this long before their lease would end, if none is taken. */
const GIVE_BACK_AHEAD_MS = 50;

/**
 * A held delivery pushed this long ago and still not taken says the consumers take fewer than
 * the prefetch lets through (their handlers slowed down): the prefetch falls to what they hold.
 */
const LOWER_AFTER_MS = 100;

/**
 * Held deliveries wait at most this long for a receive of their own subscription while a
 * receive of another subscription of the client waits on the queue with nothing: a consumer at
 * work takes what it holds within milliseconds, and the other one should not wait idleMs.
 */
const SHARE_AFTER_MS = 100;

/** A delivery handed to a receive and not yet settled through this client. */
interface InHand {
  /** When its lease ends (this client's time). */
  until: number;
  /** The subscription it was pushed to (the server counts it against that one alone). */
  subscription: number | undefined;
  /** When it was handed out (this client's time). */
  handedAt: number;
  /**
   * Its ack or nack is on its way, sent LOWER_AFTER_MS or more after it was handed out (its
   * handler was slow): it no longer counts in the demand (see demand).
   */
  slowSettle: boolean;
}

/** Consumers' signals watched at most per subscription; past it, the oldest is let go. */
const MAX_WATCHED_SIGNALS = 64;

export interface PrefetchSettings {
  queue: string;
  visibility: number | undefined;
  session: string | undefined;
  /** How long pushed deliveries may wait for a receive before they are given back. */
  idleMs: number;
  /** Gives deliveries back at once (nack, no delay). */
  release(queue: string, receipts: string[]): Promise<void>;
  /**
   * One reserve of `max` with this subscription's visibility and session, as a receive with
   * wait 0: a wait's last look (see take). Without it, a wait that runs out answers empty.
   */
  reserve?(max: number): Promise<WireDelivery[]>;
  /**
   * Whether a receive of another subscription of this client waits on the queue with nothing
   * held: held deliveries then go back after SHARE_AFTER_MS, not idleMs.
   */
  othersWaiting?(): boolean;
  /** A receive began to wait here with nothing held (the others may share theirs). */
  waiting?(): void;
  /**
   * Nothing is left of it (see letGoIfIdle): the channel forgets it, so that a client receiving
   * from queue after queue (one made and deleted per tenant or task) does not keep one per queue
   * it ever waited on. The next receive makes another, which starts as this one would have (see
   * startAfresh).
   */
  idle?(): void;
  /**
   * Called as this one is about to subscribe, with the server's maxSubscriptions (its ready
   * frame's): when the client's subscriptions would otherwise exceed it, the channel ends some
   * that nothing uses (see unused), least recently received through first, and answers once
   * they have ended, so that the subscribe is not refused for them.
   */
  makeRoom?(maxSubscriptions: number | undefined): Promise<unknown> | undefined;
  /**
   * The server ended this subscription as its session has ended (SESSION_CLOSED): the
   * session's other subscriptions of this client are over too, and hand out nothing they hold.
   */
  sessionEnded?(): void;
}

/**
 * The client side of one subscription: receives with the same queue, visibility and session
 * share it. Its prefetch is the largest `max` asked for, or, when larger, the deliveries it
 * handed out and not yet settled plus what its waiting receives ask for (see raiseToDemand),
 * falling back to that when held deliveries go untaken (see lowerIfHoarding); the server
 * pushes as credit allows, so a worker that acks gets its next jobs without asking.
 * Deliveries pushed while no receive waits are held (still leased to this client) and handed
 * to the next receive; held ones that no receive takes within `idleMs` are given back and the
 * subscription ends.
 *
 * A receive's signal stands for its consumer (a worker passes its stop signal to every
 * receive): once every consumer seen has stopped and no receive waits, the subscription ends
 * at once and gives back what it holds, so a closed worker's credit takes no more jobs.
 */
export class Prefetch implements PushListener {
  private buffer: WireDelivery[] = [];
  /**
   * Held deliveries by receipt: their lease's deadline (the server's time) and when they were
   * pushed (this client's time).
   */
  private readonly held = new Map<string, { deadline: number; since: number }>();
  /**
   * How far the server's clock is ahead of this client's, as the last push said (its `now`):
   * deadlines are the server's, and a held delivery's lease ends by the server's clock. A
   * server whose clock jumped ends the leases by the new time; the next push tells.
   */
  private serverAhead = 0;
  private readonly waiters = new Set<Waiter>();
  private subscription: number | undefined;
  private opening: Promise<void> | undefined;
  /**
   * An `unsubscribed` that came while a subscribe was on its way: the server may end a
   * subscription (its storage failed) right after answering, and both frames can be read
   * before this client has taken the answer in. The subscribe then learns it was ended.
   */
  private endedWhileOpening: UnsubscribedFrame | undefined;
  private subscribing = false;
  private prefetch = 0;
  /** The largest `max` a receive asked for: the prefetch never falls below it. */
  private mostAsked = 0;
  private idleTimer: LongTimeout | undefined;
  /** When the armed idle timer fires (this client's time). */
  private idleDue = 0;
  private ending: Promise<void> | undefined;
  /** The client closed: nothing subscribes again (see close). */
  private closed = false;
  /** Receives under way here, from their call to their answer. */
  private taking = 0;
  /**
   * Nothing was left of it (see letGoIfIdle): a credit raise still on its way opens no
   * subscription, which no receive would reach once the channel forgot this one. A receive here
   * takes it up again.
   */
  private letGo = false;
  /**
   * Receipts handed to receives and not yet settled through this client → when their lease
   * ends (this client's time) and the subscription they were pushed to. The server counts a
   * delivery against that subscription's prefetch until then, so this client counts it as long
   * while that subscription is open; a dropped one stops counting when its lease ends. A
   * subscription opened again (on this connection or the next) starts from zero on the server,
   * and counts none of them.
   */
  private readonly inHand = new Map<string, InHand>();
  /** Signals of the consumers that received through this subscription, until they abort. */
  private readonly consumers = new Map<AbortSignal, () => void>();

  constructor(
    private readonly link: StreamLink,
    private readonly settings: PrefetchSettings,
  ) {}

  /**
   * Up to `max` deliveries: held ones at once, else the first pushed within `wait` ms. A wait
   * that runs out takes one last look, a reserve, as the in-process receive does: the server
   * pushes the jobs ready when a subscription opens (or its credit rises) only after its
   * `subscribed` answer, and a short wait would otherwise end before them, answering empty
   * while jobs were ready.
   */
  async take(max: number, wait: number, signal: AbortSignal | undefined): Promise<WireDelivery[]> {
    this.letGo = false;
    this.taking += 1;
    try {
      return await this.takeOrWait(max, wait, signal);
    } finally {
      this.taking -= 1;
      this.letGoIfIdle();
    }
  }

  private async takeOrWait(
    max: number,
    wait: number,
    signal: AbortSignal | undefined,
  ): Promise<WireDelivery[]> {
    // What an ending gives back is not handed out meanwhile: its end first, then subscribe anew.
    if (this.ending !== undefined) await this.ending;
    if (this.closed) return [];
    this.watch(signal);
    this.mostAsked = Math.max(this.mostAsked, max);
    if (this.buffer.length === 0 || this.subscription === undefined) {
      try {
        // The signal ends this wait too, as it ends a wait for pushes: a connection being opened
        // (after a backoff, to a server that may never answer) can take up to timeoutMs, and a
        // stopping worker would wait that long. What goes on without it subscribes nothing.
        await untilAborted(
          (async () => {
            await this.ensure(max, signal);
            // Ended meanwhile (another consumer stopped, a wait elsewhere ran out): this receive
            // still waits, and waits on a subscription of its own.
            if (this.subscription === undefined && wait > 0 && !signal?.aborted && !this.closed) {
              await this.ensure(max, signal);
            }
          })(),
          signal,
        );
      } catch (error) {
        // The subscribe failed as the client closed (its connection ended): empty, as below.
        if (!this.closed) throw error;
      }
      // The client closed while this receive subscribed: it answers empty, as a waiting one.
      if (this.closed) return [];
    } else if (max > this.prefetch) void this.ensure(max, signal).catch(() => {});
    const held = this.takeLive(max);
    if (held.length > 0) return this.handOut(held);
    if (wait === 0 || signal?.aborted) return [];
    return new Promise((resolve, reject) => {
      const done = () => {
        timer.clear();
        unwatch?.();
        this.waiters.delete(waiter);
        if (this.waiters.size === 0 && this.buffer.length > 0) this.armIdle();
      };
      const waiter: Waiter = {
        max,
        resolve: (deliveries) => {
          done();
          resolve(this.handOut(deliveries));
        },
        reject: (error) => {
          done();
          reject(error);
        },
      };
      const aborted = () => waiter.resolve([]);
      const timedOut = () => {
        // Nobody else waits, nothing is held, and no consumer said it goes on (a worker's
        // signal): left open, the subscription would take the next job only to give it back
        // later, and each visibility waited on once would hold a subscription of the
        // connection's few. It ends first, then the last look: by then whatever the server
        // reserved for it was pushed (and is given back) or released, so the look sees it.
        if (this.waiters.size === 1 && this.consumers.size === 0 && this.buffer.length === 0) {
          done();
          void this.end()
            .then(() => (signal?.aborted ? [] : this.lookNow(max)))
            .then(resolve);
          return;
        }
        const reserve = this.settings.reserve;
        if (reserve === undefined) return aborted();
        // The subscription goes on: a push that comes meanwhile is still this receive's.
        reserve(max).then(
          (deliveries) => {
            if (!this.waiters.has(waiter)) return this.giveBack(deliveries);
            done();
            // Not counted in hand: the server counts against the prefetch only what it pushed.
            resolve(deliveries);
          },
          () => {
            if (this.waiters.has(waiter)) aborted();
          },
        );
      };
      // Of any length: a wait past the longest Node timer is timed in parts, not cut short.
      const timer = setLongTimeout(timedOut, wait);
      const unwatch = signal === undefined ? undefined : onAbort(signal, aborted);
      this.waiters.add(waiter);
      this.disarmIdle();
      this.raiseToDemand();
      this.settings.waiting?.();
    });
  }

  /** One reserve now (a wait's last look); empty when it fails: the wait has run out anyway. */
  private async lookNow(max: number): Promise<WireDelivery[]> {
    const reserve = this.settings.reserve;
    if (reserve === undefined) return [];
    return reserve(max).catch((): WireDelivery[] => []);
  }

  /** Deliveries reserved for a receive that is no longer waiting: back at once, unworked. */
  private giveBack(deliveries: readonly WireDelivery[]): void {
    if (deliveries.length === 0) return;
    const receipts = deliveries.map((delivery) => delivery.receipt);
    void this.settings.release(this.settings.queue, receipts).catch(() => {});
  }

  private watch(signal: AbortSignal | undefined): void {
    if (signal === undefined || signal.aborted || this.consumers.has(signal)) return;
    if (this.consumers.size >= MAX_WATCHED_SIGNALS) {
      const [oldest, unwatch] = this.consumers.entries().next().value as [AbortSignal, () => void];
      unwatch();
      this.consumers.delete(oldest);
    }
    const stopped = () => {
      this.consumers.delete(signal);
      unwatch();
      // After the abort's other listeners: the consumer's own waiting receive has left by then.
      queueMicrotask(() => {
        if (this.consumers.size === 0 && this.waiters.size === 0) void this.end();
      });
    };
    const unwatch = onAbort(signal, stopped);
    this.consumers.set(signal, unwatch);
  }

  /**
   * Concurrent receives each want their `max` on top of what they hold: the prefetch rises to
   * the deliveries in hand plus what the waiting receives ask for, so N loops that each receive
   * one keep N deliveries coming, not one at a time.
   */
  private raiseToDemand(): void {
    const demand = this.demand();
    if (demand > this.prefetch && this.subscription !== undefined) {
      void this.ensure(demand).catch(() => {});
    }
  }

  /** Whether pushed deliveries are held, waiting for a receive. */
  get holding(): boolean {
    return this.buffer.length > 0;
  }

  /**
   * A one-off receive's subscription left open: no receive of it waits, and none had a
   * consumer's signal (a worker's receives have one, and keep theirs open for the next).
   */
  get idleOneOff(): boolean {
    return this.waiters.size === 0 && this.consumers.size === 0;
  }

  /**
   * Open on the server, and nothing uses it: no receive under way or waiting, no consumer
   * watched (a one-off receive's, kept for the next receive of it). Ending it loses nothing: what
   * it holds goes back unworked (R33), and its next receive subscribes again.
   */
  get unused(): boolean {
    return (
      this.subscription !== undefined &&
      this.opening === undefined &&
      this.ending === undefined &&
      !this.closed &&
      this.taking === 0 &&
      this.waiters.size === 0 &&
      this.consumers.size === 0
    );
  }

  /** Its subscription is being ended (end): its unsubscribe, or what it held, on its way. */
  get leaving(): boolean {
    return this.ending !== undefined;
  }

  /**
   * Whether it holds one of the connection's subscriptions or is opening one (its subscribe,
   * or the room made for it, on its way); see leaving for one being ended.
   */
  get subscribed(): boolean {
    return this.subscription !== undefined || this.opening !== undefined;
  }

  /** A receive waits here and nothing is held for it. */
  get waitingWithNothing(): boolean {
    return this.waiters.size > 0 && this.buffer.length === 0;
  }

  /**
   * A receive of another subscription began to wait on the queue with nothing: what this one
   * holds for no receive goes back SHARE_AFTER_MS after its push, rather than idleMs.
   */
  othersBeganToWait(): void {
    if (this.waiters.size === 0 && this.buffer.length > 0) this.armIdle();
  }

  /** The queue this subscription receives from. */
  get queue(): string {
    return this.settings.queue;
  }

  /** The session its deliveries are reserved in, if any. */
  get session(): string | undefined {
    return this.settings.session;
  }

  /** Held deliveries, taken without waiting (a receive with wait 0); none while it ends. */
  takeHeld(max: number): WireDelivery[] {
    if (this.ending !== undefined) return [];
    const taken = this.handOut(this.takeLive(max));
    // Its last held ones, of a subscription already ended (its connection lost): nothing left.
    this.letGoIfIdle();
    return taken;
  }

  /** Deliveries settled through this client (ack, nack, a refused extend): out of hand. */
  settled(receipts: readonly string[]): void {
    for (const receipt of receipts) this.inHand.delete(receipt);
  }

  /**
   * The acks or nacks of these deliveries are on their way (`sent`), or were refused or lost
   * (`!sent`: they count in hand again, as the server counts them until their lease ends).
   */
  settling(receipts: readonly string[], sent: boolean): void {
    const now = performance.now();
    for (const receipt of receipts) {
      const inHand = this.inHand.get(receipt);
      if (inHand !== undefined) inHand.slowSettle = sent && now - inHand.handedAt >= LOWER_AFTER_MS;
    }
  }

  /** Deliveries in hand whose leases were extended through this client (server deadlines). */
  extended(leases: readonly { receipt: string; deadline: number }[]): void {
    for (const { receipt, deadline } of leases) {
      const held = this.inHand.get(receipt);
      if (held !== undefined) held.until = deadline - this.serverAhead;
    }
  }

  /** Every delivery of this subscription's session or queue ended at once (purge, session end). */
  settledAll(): void {
    this.inHand.clear();
  }

  /**
   * The queue was purged through this client (R19): every delivery it had made ended, and no
   * held one is handed out. They go back all the same: one pushed after the purge ran (its
   * answer late behind a slow frame) is of a job published since, and a nack of one that ended
   * is stale and changes nothing. What was in hand no longer counts: the purge freed its credit.
   */
  purged(): void {
    this.inHand.clear();
    this.giveBack(this.dropHeld(() => true));
    this.letGoIfIdle();
  }

  /**
   * Jobs cancelled through this client (R28): a held delivery of one is not handed out, and goes
   * back (stale, unless pushed after the cancel for a job of that id published again). The server
   * counts an ended one against the prefetch until its lease would have ended, so it counts here
   * as long, as one handed out.
   */
  cancelled(ids: ReadonlySet<string>): void {
    const dropped = this.dropHeld((each) => ids.has(each.id));
    for (const delivery of dropped) this.countInHand(delivery);
    this.giveBack(dropped);
    this.letGoIfIdle();
  }

  /** Takes the held deliveries that `ended` says ended out of the buffer; returns them. */
  private dropHeld(ended: (delivery: WireDelivery) => boolean): WireDelivery[] {
    const dropped: WireDelivery[] = [];
    this.buffer = this.buffer.filter((delivery) => {
      if (!ended(delivery)) return true;
      this.held.delete(delivery.receipt);
      dropped.push(delivery);
      return false;
    });
    if (this.buffer.length === 0) this.disarmIdle();
    return dropped;
  }

  /**
   * Up to `max` held deliveries whose lease has not run out: one that waited in the buffer past
   * its deadline is the server's again (it may be someone else's by now) and is dropped.
   */
  private takeLive(max: number): WireDelivery[] {
    this.dropExpired();
    const taken = this.buffer.splice(0, max);
    const now = performance.now();
    for (const delivery of taken) {
      const since = this.held.get(delivery.receipt)?.since;
      if (since !== undefined && now > since) heldAges.set(delivery, now - since);
      this.held.delete(delivery.receipt);
    }
    if (this.buffer.length === 0) this.disarmIdle();
    return taken;
  }

  private dropExpired(): void {
    if (this.buffer.length === 0) return;
    const now = performance.now() + this.serverAhead;
    this.buffer = this.buffer.filter((delivery) => {
      if ((this.held.get(delivery.receipt)?.deadline ?? Number.POSITIVE_INFINITY) > now)
        return true;
      this.held.delete(delivery.receipt);
      return false;
    });
  }

  private handOut(deliveries: WireDelivery[]): WireDelivery[] {
    for (const delivery of deliveries) this.countInHand(delivery);
    this.lowerIfHoarding(deliveries);
    return deliveries;
  }

  private countInHand(delivery: WireDelivery): void {
    this.inHand.set(delivery.receipt, {
      until: delivery.deadline - this.serverAhead,
      subscription: pushedTo.get(delivery),
      handedAt: performance.now(),
      slowSettle: false,
    });
  }

  /**
   * The prefetch rose while acks were on their way (each counts until answered); once the
   * handlers slow down, that credit would keep the buffer topped up with jobs that wait here,
   * leased, while other consumers of the queue have none. When the oldest held delivery has
   * waited LOWER_AFTER_MS, or one of those just `taken` had (a consumer that takes all it holds
   * at each receive, one of concurrency 1), the prefetch falls to the deliveries in hand (at
   * least the largest `max` asked; see demand for acks on their way): the server pushes nothing
   * more until the consumers catch up, and a receive that then waits with nothing held raises
   * it again.
   */
  private lowerIfHoarding(taken: readonly WireDelivery[]): void {
    if (this.subscription === undefined || this.opening !== undefined) return;
    const oldest = this.buffer[0];
    const since = oldest === undefined ? undefined : this.held.get(oldest.receipt)?.since;
    const waited = since !== undefined && performance.now() - since >= LOWER_AFTER_MS;
    if (!waited && !taken.some((delivery) => heldFor(delivery) >= LOWER_AFTER_MS)) return;
    const wanted = Math.max(this.mostAsked, this.demand(), 1);
    if (wanted >= this.prefetch) return;
    this.prefetch = wanted;
    void this.link
      .request({ type: 'credit', subscription: this.subscription, prefetch: wanted })
      .catch(() => {});
  }

  /**
   * The deliveries in hand (lease not over) that the open subscription was pushed, plus what
   * the waiting receives ask for. One whose ack or nack is on its way counts until answered,
   * so that a quick consumer's next jobs come while its acks travel, but not when it was in
   * hand LOWER_AFTER_MS or more before that ack went out: for a handler that slow the round
   * trip saved is small, and the job pushed for it would wait in the buffer, leased, for the
   * whole of the next handler while other consumers of the queue may have none.
   */
  private demand(): number {
    const now = performance.now();
    let demand = 0;
    for (const [receipt, { until, subscription, slowSettle }] of this.inHand) {
      if (until <= now) this.inHand.delete(receipt);
      else if (slowSettle) continue;
      else if (subscription !== undefined && subscription === this.subscription) demand += 1;
    }
    for (const waiter of this.waiters) demand += waiter.max;
    return demand;
  }

  push(frame: DeliveriesFrame | UnsubscribedFrame): void {
    if (frame.type === 'unsubscribed') {
      if (frame.subscription !== this.subscription) {
        if (this.subscribing) this.endedWhileOpening = frame;
        return;
      }
      this.subscription = undefined;
      this.startAfresh();
      if (frame.error !== undefined) {
        // Ended by a refusal (its queue deleted, its session closed): what it pushed is not
        // handed out, its job gone or given back by the server; the nacks are stale, or go back.
        this.giveBack(this.dropHeld(() => true));
        this.failWaiters(errorFromWire(frame.error));
        if (frame.error.code === 'SESSION_CLOSED') this.settings.sessionEnded?.();
      }
      this.letGoIfIdle();
      return;
    }
    this.serverAhead = frame.now - performance.now();
    const since = performance.now();
    for (const delivery of frame.deliveries) {
      this.held.set(delivery.receipt, { deadline: delivery.deadline, since });
      pushedTo.set(delivery, frame.subscription);
    }
    this.buffer.push(...frame.deliveries);
    const handed = new Set<string>();
    for (const waiter of [...this.waiters]) {
      const held = this.takeLive(waiter.max);
      if (held.length === 0) break;
      for (const delivery of held) handed.add(delivery.receipt);
      waiter.resolve(held);
    }
    if (this.waiters.size > 0) return;
    // Pushed with its lease over, or too close to its end to be given back in time (a lease
    // shorter than the way here), and no receive to take it: held, it would run out, and the
    // server would push its job again at once, each time a delivery (R13), until it died unseen.
    // The subscription ends instead: at most one such delivery per receive.
    const unfit = frame.deliveries.some(
      (delivery) =>
        !handed.has(delivery.receipt) && delivery.deadline - frame.now <= GIVE_BACK_AHEAD_MS,
    );
    if (unfit) void this.end();
    else if (this.buffer.length > 0) this.armIdle();
  }

  /** Pushed to a subscribe of this queue given up on (unanswered in time): back, unworked. */
  giveBackPushed(frame: DeliveriesFrame): void {
    this.giveBack(frame.deliveries);
  }

  /**
   * The subscription ended (its consumers stopped, the server ended it, or the connection
   * dropped): the one opened next starts from what its receives then ask for, since the server
   * counts none of this one's deliveries against it. Kept, a prefetch its consumers no longer
   * take would be pushed, held and given back, over and over, each time one more delivery of
   * those jobs (R13).
   */
  private startAfresh(): void {
    this.prefetch = 0;
    this.mostAsked = 0;
  }

  /**
   * The connection dropped: the server ended the subscription; held deliveries stay leased. The
   * one the next connection opens starts from what its receives then ask for, as after `end`
   * or an `unsubscribed`: the server counts none of the deliveries this one was pushed against
   * it.
   */
  lost(refused?: Error): void {
    this.subscription = undefined;
    this.opening = undefined;
    this.startAfresh();
    this.failWaiters(refused ?? new ConnectionLostError(STREAM_CONNECTION_LOST));
    this.letGoIfIdle();
  }

  /**
   * Ends the subscription and gives back what is held, as `end`, but the receives waiting in it
   * are not answered: they are handed to the caller (whose session is being closed) to answer.
   */
  async endKeepingWaiters(): Promise<Pick<Waiter, 'resolve' | 'reject'>[]> {
    const waiters = [...this.waiters];
    this.waiters.clear();
    await this.end();
    return waiters;
  }

  /**
   * The client closes: as `end`, and for good: a receive still on its way to a subscription (the
   * connection opening, a subscribe unanswered) answers empty instead of subscribing again.
   */
  close(): Promise<void> {
    this.closed = true;
    return this.end();
  }

  /** Ends the subscription and gives back what is held; waiting receives answer empty. */
  end(): Promise<void> {
    if (this.ending === undefined) {
      // Cleared once settled, by the promise itself: a finish that ran to its end at once would
      // otherwise be stored after it cleared, and every later end would do nothing.
      const ending: Promise<void> = this.finish().finally(() => {
        if (this.ending !== ending) return;
        this.ending = undefined;
        this.letGoIfIdle();
      });
      this.ending = ending;
    }
    return this.ending;
  }

  private async finish(): Promise<void> {
    this.disarmIdle();
    this.startAfresh();
    for (const waiter of [...this.waiters]) waiter.resolve([]);
    // A subscribe on its way is ended once answered: left open, it would take jobs for nobody
    // until their leases ran out, again and again (each time a delivery, R13).
    if (this.opening !== undefined) await this.opening.catch(() => {});
    const subscription = this.subscription;
    this.subscription = undefined;
    if (subscription !== undefined && this.link.connected) {
      await this.link.request({ type: 'unsubscribe', subscription }).catch(() => {});
      this.link.forget(subscription);
    }
    const held = this.buffer.splice(0);
    this.held.clear();
    if (held.length > 0) {
      await this.settings
        .release(
          this.settings.queue,
          held.map((delivery) => delivery.receipt),
        )
        .catch(() => {});
    }
  }

  /**
   * Subscribes (again), or raises the prefetch to `max`; neither once `signal` (the receive's
   * consumer) has aborted, which may happen while the connection opens: a subscription opened
   * then would be one nothing ends, its pushes held for nobody.
   */
  private async ensure(max: number, signal?: AbortSignal): Promise<void> {
    // The server's maxPrefetch, not a guess: a subscribe above it would be refused.
    const { maxPrefetch, maxSubscriptions } = await this.link.knownLimits();
    if (this.ending !== undefined) await this.ending;
    if (this.opening !== undefined) await this.opening;
    if (signal?.aborted || this.closed || this.letGo) return;
    // After the waits: the prefetch may have changed meanwhile (raised, or lowered).
    const wanted = Math.min(Math.max(max, this.prefetch), maxPrefetch);
    if (this.subscription !== undefined) {
      if (wanted <= this.prefetch) return;
      this.prefetch = wanted;
      const answer = await this.link.request({
        type: 'credit',
        subscription: this.subscription,
        prefetch: wanted,
      });
      if (answer.type === 'error') throw errorFromWire(answer.error);
      return;
    }
    this.opening = this.subscribe(wanted, maxSubscriptions);
    try {
      await this.opening;
    } finally {
      this.opening = undefined;
    }
  }

  private async subscribe(prefetch: number, maxSubscriptions: number | undefined): Promise<void> {
    // Room first, decided now (this one counts as opening from here): the subscriptions of
    // one-off receives, kept open for their next receive, would otherwise have the server
    // refuse this one (TOO_MANY_REQUESTS) while no receive uses them.
    const room = this.settings.makeRoom?.(maxSubscriptions);
    if (room !== undefined) await room;
    const { queue, visibility, session } = this.settings;
    this.subscribing = true;
    this.endedWhileOpening = undefined;
    let answer: ServerFrame;
    try {
      answer = await this.link.request(
        {
          type: 'subscribe',
          queue,
          prefetch,
          ...(visibility === undefined ? {} : { visibility }),
          ...(session === undefined ? {} : { session }),
        },
        this,
      );
    } finally {
      this.subscribing = false;
    }
    if (answer.type === 'error') throw errorFromWire(answer.error);
    if (answer.type !== 'subscribed') throw new Error(`unexpected answer ${answer.type}`);
    // Set by push() while the request was on its way (TypeScript cannot see that).
    const ended = this.endedWhileOpening as UnsubscribedFrame | undefined;
    this.endedWhileOpening = undefined;
    if (ended?.subscription === answer.subscription) {
      // Believing it open would leave every later receive waiting on pushes that never come.
      this.link.forget(answer.subscription);
      throw ended.error === undefined
        ? new ConnectionLostError('the server ended the subscription as it opened')
        : errorFromWire(ended.error);
    }
    this.subscription = answer.subscription;
    this.prefetch = prefetch;
  }

  /**
   * Once no subscription is open, opening or ending, no receive is under way, no consumer is
   * watched and nothing is held, the channel is told it may forget this one (settings.idle).
   */
  private letGoIfIdle(): void {
    if (
      this.closed ||
      this.letGo ||
      this.subscription !== undefined ||
      this.opening !== undefined ||
      this.ending !== undefined ||
      this.taking > 0 ||
      this.waiters.size > 0 ||
      this.consumers.size > 0 ||
      this.buffer.length > 0
    ) {
      return;
    }
    this.letGo = true;
    this.settings.idle?.();
  }

  private failWaiters(error: unknown): void {
    for (const waiter of [...this.waiters]) waiter.reject(error);
  }

  /**
   * Held deliveries that no receive takes are given back after `idleMs`, or sooner when one's
   * lease would end first: the server would take it back and push it again, each time one
   * more delivery of the job (R13 counts them), for as long as nobody takes it.
   */
  private armIdle(): void {
    const due = this.giveBackDue();
    if (due === undefined) return;
    if (this.idleTimer !== undefined) {
      if (this.idleDue <= due) return;
      this.idleTimer.clear();
    }
    this.idleDue = due;
    this.idleTimer = setLongTimeout(
      () => {
        this.idleTimer = undefined;
        if (this.waiters.size > 0) return;
        // The ones it was set for may have been taken since, by a consumer still at work:
        // only a delivery that is itself due sends everything back.
        const next = this.giveBackDue();
        // None left: their leases ran out while held (a subscription already ended).
        if (next === undefined) return this.letGoIfIdle();
        if (next <= performance.now()) void this.end();
        else this.armIdle();
      },
      Math.max(0, due - performance.now()),
    ).unref();
  }

  /**
   * When the first held delivery is due to go back (this client's time): `idleMs` after it was
   * pushed (SHARE_AFTER_MS while another subscription's receive waits with nothing), or just
   * before its lease ends; undefined when none is held.
   */
  private giveBackDue(): number | undefined {
    // Held ones whose lease already ended are the server's: they set no time for the rest.
    this.dropExpired();
    if (this.buffer.length === 0) return undefined;
    const idleMs =
      this.settings.othersWaiting?.() === true
        ? Math.min(this.settings.idleMs, SHARE_AFTER_MS)
        : this.settings.idleMs;
    let due: number | undefined;
    for (const delivery of this.buffer) {
      const held = this.held.get(delivery.receipt);
      if (held === undefined) continue;
      const own = Math.min(
        held.since + idleMs,
        held.deadline - this.serverAhead - GIVE_BACK_AHEAD_MS,
      );
      due = due === undefined ? own : Math.min(due, own);
    }
    return due;
  }

  private disarmIdle(): void {
    if (this.idleTimer === undefined) return;
    this.idleTimer.clear();
    this.idleTimer = undefined;
  }
}
