import {
  ClockError,
  type Delivery,
  type LeaseQueue,
  LeaseqError,
  type ReserveOperation,
  SessionClosedError,
} from '../../core/index.js';

/** A receive waiting for a job of one queue (see QueueHandle.reserveOnReady). */
export interface MemoryWaiting {
  readonly operation: ReserveOperation;
  /** Its place in line: the smallest is served first. */
  readonly place: number;
  /** Answered (served, or its wait ended): it takes nothing more. */
  done: boolean;
  readonly resolve: (deliveries: Delivery[]) => void;
}

/** What a serve did (see MemoryHandoffs.serve). */
export interface Served {
  /**
   * Every receive it passed over could take nothing more; false when one was refused (but not
   * for its session's end, whose wake-up makes it look) or one took a group's member at most
   * once, so that the next member went on (R24): those must look themselves.
   */
  complete: boolean;
  /**
   * Why the receive whose look it was (`own`) was refused after the step (R3) ran: its session
   * ended, say. It waits no more; the others were served all the same.
   */
  refused?: LeaseqError;
}

/**
 * The receives waiting for jobs of the queues of one memory engine, handed their jobs in the
 * very step that makes them ready (a publish, a nack, an ack that frees room), first come first
 * served: nothing runs between the two. Receives in sessions of their own, a lane each, would
 * otherwise each look at every publish and ack. Kept by queue core, not by name: a queue made
 * again under its name serves none of the receives of the one deleted.
 */
export class MemoryHandoffs {
  private readonly receivers = new Map<LeaseQueue, MemoryWaiting[]>();

  /**
   * A receive for `operation` waits among those of `core` at `place` (without one, behind those
   * waiting now); `deliveries` answers what a serve reserves for it, or none once `signal`
   * aborts (or aborted already).
   */
  wait(
    core: LeaseQueue,
    operation: ReserveOperation,
    signal: AbortSignal,
    place = Number.POSITIVE_INFINITY,
  ): { entry: MemoryWaiting; deliveries: Promise<Delivery[]> } {
    let resolve!: (deliveries: Delivery[]) => void;
    const deliveries = new Promise<Delivery[]>((answer) => {
      resolve = answer;
    });
    const entry: MemoryWaiting = { operation, place, done: false, resolve };
    if (signal.aborted) {
      entry.done = true;
      resolve([]);
      return { entry, deliveries };
    }
    let list = this.receivers.get(core);
    if (list === undefined) {
      list = [];
      this.receivers.set(core, list);
    }
    // Mostly at the back (a new receive); one waiting again goes back to its place.
    let at = list.length;
    while (at > 0 && (list[at - 1] as MemoryWaiting).place > place) at -= 1;
    list.splice(at, 0, entry);
    signal.addEventListener('abort', () => this.end(core, entry, []), { once: true });
    return { entry, deliveries };
  }

  /**
   * Reserves at `now` for the receives waiting on `core`, in the order of their places, while
   * jobs are ready; each served is answered and waits no more. `own`, the receive whose look
   * this is, reserves even when nothing is ready, as a reserve of its own would: its refusal
   * (its session ended, R16) is `refused`, the others served all the same; a clock behind the
   * queue's (R2), refused before any step, is thrown, as is any other error.
   */
  serve(core: LeaseQueue, now: number, own?: MemoryWaiting): Served {
    const served: Served = { complete: true };
    const list = this.receivers.get(core);
    if (list === undefined) return served;
    for (const entry of [...list]) {
      if (entry.done) continue;
      const mine = entry === own;
      if (!mine && core.readyCount === 0) {
        if (own === undefined || own.done) break;
        continue;
      }
      let deliveries: Delivery[];
      try {
        deliveries = core.apply(now, entry.operation);
      } catch (error) {
        if (mine && error instanceof LeaseqError && !(error instanceof ClockError)) {
          this.end(core, entry, []);
          served.refused = error;
          continue;
        }
        if (mine || !(error instanceof LeaseqError) || error instanceof ClockError) {
          if (mine) this.end(core, entry, []);
          throw error;
        }
        // Its session ended: the wake-up of that end makes it look (ServedWake.sessionsEnded).
        if (!(error instanceof SessionClosedError)) served.complete = false;
        continue;
      }
      if (deliveries.length === 0) continue;
      if (entry.operation.ack === 'auto' && deliveries.some((d) => d.group !== undefined)) {
        served.complete = false;
      }
      this.end(core, entry, deliveries);
    }
    return served;
  }

  private end(core: LeaseQueue, entry: MemoryWaiting, deliveries: Delivery[]): void {
    if (entry.done) return;
    entry.done = true;
    const list = this.receivers.get(core);
    if (list !== undefined) {
      const index = list.indexOf(entry);
      if (index >= 0) list.splice(index, 1);
      if (list.length === 0) this.receivers.delete(core);
    }
    entry.resolve(deliveries);
  }
}
