import { LeaseqError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { between } from '../crash/protocol.js';
import type { HistoryRecorder, Op } from '../history/history.js';
import type { Coverage } from './coverage.js';
import type { EventQueue } from './event-queue.js';
import type { Swarm } from './swarm.js';

/** What the simulated network did with a request. */
export type Answer<T> =
  | { kind: 'ok'; value: T }
  /** Dropped on the way, or applied with the answer lost: the caller cannot tell which. */
  | { kind: 'no-answer' }
  /** The queue refused it with a typed error (nothing applied). */
  | { kind: 'refused'; error: LeaseqError };

/** Thrown inside a recorded call whose request or answer the network lost. */
export class NetworkFault extends Error {}

/** One instance, thrown again and again: building a stack trace per fault costs more than the step. */
const NETWORK_FAULT = new NetworkFault('no answer: the request or its answer was lost');

type Body<T extends Op> = Omit<T, 'invokedAt' | 'completedAt' | 'outcome' | 'process'>;

/**
 * The shared world of one seed: simulated time, the seeded randomness, the queue under test,
 * the network between callers and queue, and the history every caller writes to.
 */
export class SimWorld {
  now = 0;
  /** Off in the liveness phase: no more faults, so everything must drain. */
  faultsOn = true;
  /** Ids redriven and not delivered since. */
  readonly redriven = new Set<string>();
  /** Ids whose delivery a worker let go of (crash, abandon, refused renewal, session end). */
  readonly letGo = new Set<string>();
  /** What the simulation's own oracles found (beyond the history checkers). */
  readonly violations: string[] = [];

  constructor(
    readonly random: () => number,
    readonly swarm: Swarm,
    readonly handle: QueueHandle,
    readonly recorder: HistoryRecorder,
    readonly coverage: Coverage,
    private readonly events: EventQueue,
  ) {}

  between(min: number, max: number): number {
    return between(this.random, min, max);
  }

  chance(rate: number): boolean {
    return this.random() < rate;
  }

  /** Runs `run` after `delayMs` of simulated time. */
  after(delayMs: number, run: () => Promise<void>): void {
    this.events.schedule(this.now + Math.max(0, Math.ceil(delayMs)), run);
  }

  /**
   * Sends one request through the simulated network: it may be dropped, or applied with its
   * answer lost (both seen as no answer), with the swarm's rates plus `extraFailRate`.
   */
  async send<T extends Op, R>(
    process: string,
    body: Body<T>,
    call: (now: number) => Promise<R>,
    done: (answer: R) => Partial<Body<T>>,
    extraFailRate = 0,
  ): Promise<Answer<R>> {
    const { droppedRate, lostAnswerRate } = this.swarm;
    const roll = this.random();
    const dropped = this.faultsOn && roll < droppedRate + extraFailRate;
    const lost = this.faultsOn && !dropped && roll < droppedRate + extraFailRate + lostAnswerRate;
    try {
      const value = await this.recorder.record<T, R>(
        process,
        body,
        async () => {
          if (dropped) throw NETWORK_FAULT;
          const answer = await call(this.now);
          if (lost) throw NETWORK_FAULT;
          return answer;
        },
        done,
      );
      return { kind: 'ok', value };
    } catch (error) {
      if (error instanceof NetworkFault) return { kind: 'no-answer' };
      if (error instanceof LeaseqError) return { kind: 'refused', error };
      throw error;
    }
  }

  violate(text: string): void {
    if (this.violations.length < 50) this.violations.push(`t=${this.now}: ${text}`);
  }
}

/** How the recorder classifies a failed call: typed refusals changed nothing. */
export function classifySimError(error: unknown): 'fail' | 'unknown' {
  return error instanceof LeaseqError ? 'fail' : 'unknown';
}
