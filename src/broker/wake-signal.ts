import { onAbort } from './on-abort.js';

/** Parked receivers of one queue that can take the same jobs, first parked first. */
type Lane = Set<() => void>;

/**
 * Parks receivers of a queue until something may have made a job ready there.
 *
 * A wake-up looks with one receiver per lane, not all of them: receivers of one lane (those
 * of one session and ack mode, or of none and one ack mode) can take the same jobs, so when
 * the first finds nothing the others would find nothing too. One that takes all it asked for, or leaves without
 * taking any, passes the wake-up on to the next of its lane (`relay`). A thousand parked
 * receives then cost a publish one look, not a thousand.
 */
export class WakeSignal {
  private readonly parked = new Map<string, Map<string, Lane>>();

  /** `watch(queue)` is told while a receiver of `queue` is parked (see Engine.watchWakes). */
  constructor(private readonly watch?: (queue: string) => () => void) {}

  /**
   * Resolves when a wake-up of `queue` reaches this receiver in `lane`, or when the returned
   * promise is abandoned (`signal` aborts).
   */
  next(queue: string, lane: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      let lanes = this.parked.get(queue);
      if (lanes === undefined) {
        lanes = new Map();
        this.parked.set(queue, lanes);
      }
      let waiters = lanes.get(lane);
      if (waiters === undefined) {
        waiters = new Set();
        lanes.set(lane, waiters);
      }
      const ofQueue = lanes;
      const ofLane = waiters;
      const unwatchQueue = this.watch?.(queue);
      const done = () => {
        unwatchQueue?.();
        ofLane.delete(done);
        if (ofLane.size === 0 && ofQueue.get(lane) === ofLane) ofQueue.delete(lane);
        if (ofQueue.size === 0 && this.parked.get(queue) === ofQueue) this.parked.delete(queue);
        unwatchSignal();
        resolve();
      };
      ofLane.add(done);
      const unwatchSignal = onAbort(signal, done);
    });
  }

  /** Something may have made jobs of `queue` ready: the first receiver of each lane looks. */
  wake(queue: string): void {
    const lanes = this.parked.get(queue);
    if (lanes === undefined) return;
    for (const waiters of [...lanes.values()]) first(waiters)?.();
  }

  /** The next receiver of `queue`'s `lane` looks (see the class comment). */
  relay(queue: string, lane: string): void {
    const waiters = this.parked.get(queue)?.get(lane);
    if (waiters !== undefined) first(waiters)?.();
  }

  /** Every receiver of `queue` looks (its queue deleted), or of every queue (shutdown). */
  wakeAll(queue?: string): void {
    const queues = queue === undefined ? [...this.parked.keys()] : [queue];
    for (const name of queues) {
      for (const waiters of [...(this.parked.get(name)?.values() ?? [])]) {
        for (const done of [...waiters]) done();
      }
    }
  }
}

function first(waiters: Lane): (() => void) | undefined {
  for (const done of waiters) return done;
  return undefined;
}
