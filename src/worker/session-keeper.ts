import type { Clock } from '../broker/clock.js';
import type { Queue } from '../broker/queue.js';
import type { SessionOptions } from '../core/index.js';
import { abortableSleep } from './abortable-sleep.js';

/** What one heartbeat step did. */
export type HeartbeatStep = 'beat' | 'ended' | 'error' | 'none';

export interface SessionKeeperParams {
  queue: Queue;
  clock: Clock;
  options: SessionOptions;
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
 * timeout, reopened after it ended, closed on shutdown.
 */
export class SessionKeeper {
  private id: string | undefined;
  private opening: Promise<string> | undefined;

  constructor(private readonly params: SessionKeeperParams) {}

  /** The live session's id, opening one when there is none. */
  current(): Promise<string> {
    if (this.id !== undefined) return Promise.resolve(this.id);
    this.opening ??= this.params.queue.openSession(this.params.options).then(
      (id) => {
        this.id = id;
        this.opening = undefined;
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

  /** One heartbeat of the live session, if any. */
  async heartbeatOnce(): Promise<HeartbeatStep> {
    const id = this.id;
    if (id === undefined) return 'none';
    try {
      await this.params.queue.heartbeat(id);
      return 'beat';
    } catch (error) {
      if (isSessionClosed(error)) {
        this.ended(id);
        return 'ended';
      }
      this.params.onError(error);
      return 'error';
    }
  }

  /** Heartbeats every `intervalMs` until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    if (!Number.isFinite(this.intervalMs)) return;
    while (!signal.aborted) {
      await abortableSleep(this.params.clock, this.intervalMs, signal);
      if (!signal.aborted) await this.heartbeatOnce();
    }
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
