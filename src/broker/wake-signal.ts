import { onAbort } from './on-abort.js';

/** A parked receiver: its place in line (see takePlace) and what wakes it. */
interface Parked {
  readonly place: number;
  readonly done: () => void;
  /** Told of a served wake-up (see wakeServed): true when it must look. None: as after any. */
  readonly served?: (nextEventAt: number) => boolean;
  /** The session it receives in, if any: it looks at a served wake-up that ended it. */
  readonly session?: string;
}

/** Parked receivers of one queue that can take the same jobs, in order of their places. */
type Lane = Parked[];

let lastPlace = 0;

/**
 * A receive's place in line among the receivers waiting in this process, taken once as it
 * begins to wait and kept for the whole wait: one woken that finds nothing (another took the
 * job) parks again at its place, not behind those that came after it, so it is not passed over
 * wake-up after wake-up until its wait ends.
 */
export function takePlace(): number {
  lastPlace += 1;
  return lastPlace;
}

/**
 * Parks receivers of a queue until something may have made a job ready there.
 *
 * A wake-up looks with one receiver per lane, not all of them: receivers of one lane (those
 * of one session and ack mode, or of none and one ack mode) can take the same jobs, so when
 * the first finds nothing the others would find nothing too. One that takes all it asked for, or leaves without
 * taking any, passes the wake-up on to the next of its lane (`relay`). A thousand parked
 * receives then cost a publish one look, not a thousand. Receivers are first come, first
 * served: a lane's first is the one with the earliest place, and the lanes look in the order
 * of their firsts' places, so of receivers of several lanes the one that waited longest looks
 * first.
 */
export class WakeSignal {
  private readonly parked = new Map<string, Map<string, Lane>>();
  /** What hears every wake-up of a queue that its receivers all look at (see listen). */
  private readonly listeners = new Map<string, Set<() => void>>();

  /** `watch(queue)` is told while a receiver of `queue` is parked (see Engine.watchWakes). */
  constructor(private readonly watch?: (queue: string) => () => void) {}

  /**
   * Resolves when a wake-up of `queue` reaches this receiver in `lane` (`woken` is called then,
   * at once), or when the returned promise is abandoned (`signal` aborts). `place` (see
   * takePlace) orders it among the lane's receivers; without one it parks behind them all.
   * `served` and `session`: see wakeServed.
   */
  next(
    queue: string,
    lane: string,
    signal: AbortSignal,
    place = takePlace(),
    woken?: () => void,
    served?: (nextEventAt: number) => boolean,
    session?: string,
  ): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      let lanes = this.parked.get(queue);
      if (lanes === undefined) {
        lanes = new Map();
        this.parked.set(queue, lanes);
      }
      let waiters = lanes.get(lane);
      if (waiters === undefined) {
        waiters = [];
        lanes.set(lane, waiters);
      }
      const ofQueue = lanes;
      const ofLane = waiters;
      const unwatchQueue = this.watch?.(queue);
      const done = () => {
        const index = ofLane.indexOf(entry);
        if (index < 0) return;
        ofLane.splice(index, 1);
        unwatchQueue?.();
        if (ofLane.length === 0 && ofQueue.get(lane) === ofLane) ofQueue.delete(lane);
        if (ofQueue.size === 0 && this.parked.get(queue) === ofQueue) this.parked.delete(queue);
        unwatchSignal();
        resolve();
      };
      const entry: Parked = {
        place,
        done: () => {
          if (ofLane.includes(entry)) woken?.();
          done();
        },
        served,
        ...(session === undefined ? {} : { session }),
      };
      // Mostly at the back (a new receive); one parking again goes back to its place.
      let at = ofLane.length;
      while (at > 0 && (ofLane[at - 1] as Parked).place > place) at -= 1;
      ofLane.splice(at, 0, entry);
      const unwatchSignal = onAbort(signal, done);
    });
  }

  /**
   * Something may have made jobs of `queue` ready: the first receiver of each lane looks, the
   * one that waited longest first.
   */
  wake(queue: string): void {
    const lanes = this.parked.get(queue);
    if (lanes !== undefined) {
      const firsts = [...lanes.values()].flatMap((waiters) => waiters.slice(0, 1));
      firsts.sort((a, b) => a.place - b.place);
      for (const { done } of firsts) done();
    }
    this.tell(queue);
  }

  /**
   * Calls `listener` at each wake-up of `queue` that its receivers all look at (`wake`):
   * something may have made jobs ready or ended a session (R16), in this process or in another
   * one that tells. At a served one (`wakeServed`) only when it ended sessions: the storage
   * offered its jobs to the waiting receivers then. Returns the removal. While it listens,
   * the engine watches for other processes' wake-ups of `queue` as for a parked receiver.
   */
  listen(queue: string, listener: () => void): () => void {
    let listeners = this.listeners.get(queue);
    if (listeners === undefined) {
      listeners = new Set();
      this.listeners.set(queue, listeners);
    }
    const ofQueue = listeners;
    // Its own function each time: one listener added twice is removed twice.
    const entry = () => listener();
    ofQueue.add(entry);
    const unwatchQueue = this.watch?.(queue);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      ofQueue.delete(entry);
      if (ofQueue.size === 0 && this.listeners.get(queue) === ofQueue) this.listeners.delete(queue);
      unwatchQueue?.();
    };
  }

  /** Tells `queue`'s listeners (see listen). */
  private tell(queue: string): void {
    const listeners = this.listeners.get(queue);
    if (listeners === undefined) return;
    for (const listener of [...listeners]) listener();
  }

  /**
   * Something may have made jobs of `queue` ready, and the engine already offered them to the
   * receivers waiting on it (a WakeListener's `served`), the queue's next event then being at
   * `nextEventAt` or later. A receiver that takes such a wake-up itself (`served`) looks only
   * if it says it must (its look was under way), and otherwise sleeps no later than that time;
   * in a lane of others, the first looks, as at any wake-up. Those at the places `unseen` began
   * to wait unseen by the engine: they look. Receivers in sessions of their own, a lane each,
   * would otherwise all look at every publish and ack. Those in a session of `sessionsEnded`
   * look, to learn of its end (R16), and the queue's listeners are told (see listen): with a
   * thousand receives waiting in sessions of their own, a session's end made each of them look.
   */
  wakeServed(
    queue: string,
    nextEventAt: number,
    unseen: readonly number[],
    sessionsEnded: readonly string[] = [],
  ): void {
    const lanes = this.parked.get(queue);
    if (lanes !== undefined) {
      const ended = sessionsEnded.length === 0 ? undefined : new Set(sessionsEnded);
      const looking: Parked[] = [];
      for (const waiters of lanes.values()) {
        const first = waiters[0];
        for (const entry of [...waiters]) {
          const looks = entry.served === undefined ? entry === first : entry.served(nextEventAt);
          if (
            looks ||
            unseen.includes(entry.place) ||
            (entry.session !== undefined && ended?.has(entry.session) === true)
          ) {
            looking.push(entry);
          }
        }
      }
      looking.sort((a, b) => a.place - b.place);
      for (const { done } of looking) done();
    }
    if (sessionsEnded.length > 0) this.tell(queue);
  }

  /** The next receiver of `queue`'s `lane` looks (see the class comment). */
  relay(queue: string, lane: string): void {
    this.parked.get(queue)?.get(lane)?.[0]?.done();
  }

  /** Every receiver of `queue` looks (its queue deleted), or of every queue (shutdown). */
  wakeAll(queue?: string): void {
    const queues = queue === undefined ? [...this.parked.keys()] : [queue];
    for (const name of queues) {
      for (const waiters of [...(this.parked.get(name)?.values() ?? [])]) {
        for (const { done } of [...waiters]) done();
      }
    }
  }
}
