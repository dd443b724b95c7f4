import type { Clock } from '../broker/clock.js';
import { untilAborted } from '../broker/on-abort.js';
import type { Queue } from '../broker/queue.js';
import type { SessionOptions } from '../core/index.js';
import { abortableSleep } from './abortable-sleep.js';
import { ioTurn } from './io-turn.js';

/** What one heartbeat step did. */
export type HeartbeatStep = 'beat' | 'ended' | 'error' | 'none';

export interface SessionKeeperParams {
  queue: Queue;
  clock: Clock;
  options: SessionOptions;
  /**
   * Aborts as the worker stops fetching. A session not open by then is not waited for, and one
   * whose open answers later is closed at once: no receive is made under it, so it holds nothing.
   */
  stopping: AbortSignal;
  /** The session ended under the worker (R16): its deliveries are released, their tokens void. */
  onEnded: (sessionId: string) => void;
  onError: (error: unknown) => void;
}

/** True for the error a queue raises on an ended session, in-process or over HTTP. */
export function isSessionClosed(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SESSION_CLOSED';
}

/**
 * The worker's consumer session (R16): opened on first use, heartbeaten at a third of its
 * timeout, reopened after it ended, closed on shutdown. It ends when the queue says so
 * (SESSION_CLOSED), and also when no heartbeat was answered for the session's timeout: the
 * queue has ended it by then (R16), whether or not the worker can reach it to hear that.
 */
export class SessionKeeper {
  private id: string | undefined;
  private opening: Promise<string | undefined> | undefined;
  /**
   * When the last heartbeat the queue answered (or the open) was sent, on the worker's clock:
   * the queue keeps the session at least `timeout` from then, and need not keep it longer.
   */
  private aliveSince = 0;
  /**
   * When the last answer that kept it (a heartbeat's, or the open's) came in, on the worker's
   * clock: the queue heard that call no later, so once `timeout` has passed since, it has
   * ended the session (but for a heartbeat whose answer was lost, which fails here too).
   */
  private answeredAt = 0;
  /** The heartbeat on its way, if any: one at a time, however long one takes. */
  private beating: Promise<HeartbeatStep> | undefined;

  constructor(private readonly params: SessionKeeperParams) {}

  /**
   * The live session's id, opening one when there is none; undefined once the worker stops
   * fetching with none open. Its open may wait long (a client reconnecting to a server that
   * accepts connections and never answers, up to its timeoutMs): a stopping worker waits for it
   * no longer, and the open goes on without it.
   */
  current(): Promise<string | undefined> {
    if (this.id !== undefined) return Promise.resolve(this.id);
    const { stopping } = this.params;
    if (stopping.aborted) return Promise.resolve(undefined);
    return untilAborted(this.open(), stopping);
  }

  /** Opens the session, one open at a time; undefined when it answered after the stop. */
  private open(): Promise<string | undefined> {
    const sentAt = this.params.clock.now();
    this.opening ??= this.params.queue.openSession(this.params.options).then(
      (id) => {
        this.opening = undefined;
        if (this.params.stopping.aborted) {
          // Opened late, as the worker stops: it holds nothing (R16), and would otherwise stay
          // open on the queue, unheartbeaten, for its whole timeout.
          this.params.queue.closeSession(id).catch(() => undefined);
          return undefined;
        }
        this.id = id;
        this.aliveSince = sentAt;
        this.answeredAt = this.params.clock.now();
        return id;
      },
      (error: unknown) => {
        this.opening = undefined;
        throw error;
      },
    );
    return this.opening;
  }

  /** The worker saw the session end (an operation failed with SESSION_CLOSED). */
  ended(sessionId: string): void {
    if (this.id !== sessionId) return;
    this.id = undefined;
    this.params.onEnded(sessionId);
  }

  /** Milliseconds between heartbeats: a third of the timeout; Infinity when there is none. */
  get intervalMs(): number {
    const timeout = this.params.options.timeout ?? Number.POSITIVE_INFINITY;
    return Number.isFinite(timeout) ? Math.max(1, Math.floor(timeout / 3)) : timeout;
  }

  /**
   * One heartbeat of the live session, if any. Sent even when the session looks outlived: its
   * open may have waited in the client (reconnecting to a restarted server) long after it was
   * asked for, so only a heartbeat that fails, or gets no answer, counts it ended (R16). Not
   * sent once a whole timeout passed since the last answer came in (the process was paused):
   * the queue has ended the session then, and a link that stays silent would keep its jobs
   * running beside their next consumers until the next wake-up.
   */
  async heartbeatOnce(): Promise<HeartbeatStep> {
    const id = this.id;
    if (id === undefined) return 'none';
    if (this.outlived(id, this.answeredAt)) return 'ended';
    const sentAt = this.params.clock.now();
    try {
      await this.params.queue.heartbeat(id);
      if (this.id === id) {
        this.aliveSince = Math.max(this.aliveSince, sentAt);
        this.answeredAt = this.params.clock.now();
      }
      return 'beat';
    } catch (error) {
      if (isSessionClosed(error)) {
        this.ended(id);
        return 'ended';
      }
      this.params.onError(error);
      return this.outlived(id) ? 'ended' : 'error';
    }
  }

  /** Heartbeats every `intervalMs` until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    if (!Number.isFinite(this.intervalMs)) return;
    while (!signal.aborted) {
      await abortableSleep(this.params.clock, this.intervalMs, signal);
      if (signal.aborted) break;
      // A heartbeat still on its way (a half-open connection) is not sent again, and does not
      // keep the session's end from being seen.
      if (this.beating === undefined) {
        this.beating = this.heartbeatOnce().finally(() => {
          this.beating = undefined;
        });
      } else if (this.id !== undefined) {
        // Its answer may be waiting unread behind this wake-up, late behind a blocked event
        // loop: read it before counting the session outlived.
        const id = this.id;
        await ioTurn();
        this.outlived(id);
      }
    }
  }

  /**
   * True, and the session ended here, when `id` went a whole timeout without an answered
   * heartbeat (counted from `since`: when the last answered one was sent, by default): its
   * deliveries are the queue's again. It is closed too, at best effort, in case the queue heard
   * heartbeats whose answers were lost (then it releases them now, not later).
   */
  private outlived(id: string, since = this.aliveSince): boolean {
    const timeout = this.params.options.timeout ?? Number.POSITIVE_INFINITY;
    if (this.id !== id || this.params.clock.now() - since < timeout) return false;
    this.ended(id);
    this.params.queue.closeSession(id).catch(() => undefined);
    return true;
  }

  /** Closes the live session; what it still holds is released at once (R16). */
  async close(): Promise<void> {
    const id = this.id;
    this.id = undefined;
    if (id === undefined) return;
    try {
      await this.params.queue.closeSession(id);
    } catch (error) {
      if (!isSessionClosed(error)) this.params.onError(error);
    }
  }
}
