import {
  ClockError,
  type Delivery,
  LeaseqError,
  type ReserveOperation,
  SessionClosedError,
} from '../../core/index.js';
import type { BatchContext } from './executor.js';
import type { QueueOps } from './queue-ops.js';

/** A receiver of this process waiting for a job of one queue. */
interface Waiting {
  readonly operation: ReserveOperation;
  /** Its place in line: the smallest is served first (see QueueHandle.reserveOnReady). */
  readonly place: number;
  /** A pinned handle's (Engine.pinnedHandle): the making of the queue it takes jobs of. */
  readonly making: number | undefined;
  /** Set while a transaction that reserved for it has not yet committed or rolled back. */
  heldBy: BatchContext | undefined;
  /** Its receiver stopped waiting: answered at once, or when the holding transaction ends. */
  stopped: boolean;
  /** Answered: it takes nothing more. */
  done: boolean;
  /** When it began to wait, in the order of Handoffs.registrations. */
  readonly since: number;
  /**
   * It began to wait after a look of its own (see wait): a transaction that served the others
   * meanwhile may not have seen it.
   */
  readonly late: boolean;
  readonly resolve: (deliveries: Delivery[]) => void;
}

/**
 * Receivers waiting in this process, handed their jobs by the transaction that makes the jobs
 * ready (a publish, a nack, a redrive): the reservation commits with the publish, so a job
 * reaches its consumer after one commit instead of the publish's and then the consumer's own.
 */
export class Handoffs {
  private readonly receivers = new Map<string, Waiting[]>();
  /** How many waits began so far (see Waiting.since). */
  private registrations = 0;

  /** Whether any receiver of this process waits (for any queue). */
  waiting(): boolean {
    return this.receivers.size > 0;
  }

  /**
   * The places of the receivers still waiting for `queue` that began to wait late after `mark`
   * (a serve's answer): the serve did not see them, and their own reserve, answered while it
   * ran, may have missed its jobs (on PostgreSQL, where a reserve is a statement of its own).
   */
  unseenSince(queue: string, mark: number): number[] {
    const places: number[] = [];
    for (const entry of this.receivers.get(queue) ?? []) {
      if (entry.late && !entry.done && entry.since > mark) places.push(entry.place);
    }
    return places;
  }

  /** Whether a receiver of this process waits for `queue` in a session. */
  sessionWaitingFor(queue: string): boolean {
    return (
      this.receivers.get(queue)?.some((entry) => entry.operation.session !== undefined) ?? false
    );
  }

  /**
   * Resolves with the deliveries a transaction reserved for `operation` once it committed, or
   * with none when `signal` aborts first (a reservation already made still comes with its
   * commit: it is never dropped). Served in the order of `place`; without one, after those
   * waiting now. With a `making` (QueueRow.incarnation), only by a transaction on that making
   * of the queue, not on one made again under its name. `late`: it waits after a reserve of its
   * own found nothing, rather than before a transaction that serves it (see unseenSince).
   */
  wait(
    queue: string,
    operation: ReserveOperation,
    signal: AbortSignal,
    place = Number.POSITIVE_INFINITY,
    making?: number,
    late = false,
  ): Promise<Delivery[]> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve([]);
      const entry: Waiting = {
        operation,
        place,
        making,
        heldBy: undefined,
        stopped: false,
        done: false,
        since: ++this.registrations,
        late,
        resolve,
      };
      const list = this.receivers.get(queue) ?? [];
      // Mostly at the back (a new receive); one waiting again goes back to its place.
      let at = list.length;
      while (at > 0 && (list[at - 1] as Waiting).place > place) at -= 1;
      list.splice(at, 0, entry);
      this.receivers.set(queue, list);
      signal.addEventListener(
        'abort',
        () => {
          entry.stopped = true;
          if (entry.heldBy === undefined) this.end(queue, entry, []);
        },
        { once: true },
      );
    });
  }

  /**
   * Inside a transaction that made jobs of `ops`' queue ready: reserves for the waiting
   * receivers, first come first served (in the order of their places), while jobs are ready.
   * Each is answered when the transaction commits; on rollback it waits again (or ends, if its
   * wait ended meanwhile). When every receiver waiting for the queue was served as far as it
   * could be (each took what it may, or none could take more: nothing was left ready, or its
   * session was at its prefetch bound), the answer is a mark for unseenSince; undefined when one
   * was passed over (another transaction holds it, or its reserve was refused): it must look
   * again itself.
   */
  async serve(ops: QueueOps, now: number, batch: BatchContext): Promise<number | undefined> {
    const queue = ops.q.name;
    const mark = this.registrations;
    const waiting = [...(this.receivers.get(queue) ?? [])];
    let complete = true;
    // Room left in the waiting receivers' sessions, read once the first of them took nothing
    // (mostly the first takes the job): a receiver whose session is at its prefetch (R16) is then
    // passed over without a reserve. Many workers, each in a session of its own and at its bound
    // while jobs are ready, would otherwise cost two reads each per call.
    let room: Map<string, number> | undefined;
    let sessionTookNothing = false;
    for (const entry of waiting) {
      if (ops.q.ready === 0) return complete ? mark : undefined;
      if (entry.stopped || entry.done) continue;
      if (entry.heldBy !== undefined) {
        complete = false;
        continue;
      }
      if (entry.making !== undefined && entry.making !== ops.q.incarnation) continue;
      const { session, ack } = entry.operation;
      const bounded = session !== undefined && ack !== 'auto';
      if (bounded && sessionTookNothing) {
        room ??= await ops.sessionRoom(sessionsOf(waiting));
        if ((room.get(session) ?? Number.POSITIVE_INFINITY) <= 0) continue;
      }
      // Held from before the reserve: a receiver that stops waiting while it runs (a round
      // trip on PostgreSQL) is answered by this transaction, never left out of a reservation
      // made for it (its job would stay leased to nobody until the lease ran out).
      entry.heldBy = batch;
      let deliveries: Delivery[];
      try {
        deliveries = await ops.reserve(now, entry.operation);
      } catch (error) {
        this.letGo(queue, entry);
        // Refused for this receiver: it learns why at its own next call. Its session ended: the
        // wake-up of that end makes it look (see ServedWake.sessionsEnded), no other need.
        if (error instanceof LeaseqError && !(error instanceof ClockError)) {
          if (!(error instanceof SessionClosedError)) complete = false;
          continue;
        }
        throw error;
      }
      if (deliveries.length === 0) {
        this.letGo(queue, entry);
        if (bounded) sessionTookNothing = true;
        continue;
      }
      // What an at-most-once receive takes is not held (R22): its session's room stays.
      const left = bounded ? room?.get(session as string) : undefined;
      if (left !== undefined) room?.set(session as string, left - deliveries.length);
      if (entry.operation.ack === 'auto') {
        // Removed as handed out (R22): a change of the job, on disk before it is answered
        // (R21), though this transaction may otherwise only move leases.
        batch.syncBeforeAnswers();
        const { durableCommit } = ops.dialect;
        if (durableCommit !== undefined) await ops.c.runBeforeCommit(durableCommit, []);
      }
      // A reservation need not be on disk (R21): answered once it is visible (R32).
      batch.afterVisible(() => this.end(queue, entry, deliveries));
      batch.afterRollback(() => this.letGo(queue, entry));
    }
    return complete ? mark : undefined;
  }

  /** No longer held by a transaction: it waits on, or ends if its wait ended meanwhile. */
  private letGo(queue: string, entry: Waiting): void {
    entry.heldBy = undefined;
    if (entry.stopped) this.end(queue, entry, []);
  }

  private end(queue: string, entry: Waiting, deliveries: Delivery[]): void {
    if (entry.done) return;
    entry.done = true;
    const list = this.receivers.get(queue) ?? [];
    const index = list.indexOf(entry);
    if (index >= 0) list.splice(index, 1);
    if (list.length === 0) this.receivers.delete(queue);
    entry.resolve(deliveries);
  }
}

/** The sessions the receivers wait in, each once. */
function sessionsOf(waiting: readonly Waiting[]): string[] {
  const sessions = new Set<string>();
  for (const { operation } of waiting)
    if (operation.session !== undefined) sessions.add(operation.session);
  return [...sessions];
}
