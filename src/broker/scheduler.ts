import type { Engine } from '../engine/index.js';
import type { Clock } from './clock.js';
import { dueOccurrence, occurrenceId } from './schedule-times.js';

/** One occurrence a scheduler pass published. */
export interface PublishedOccurrence {
  queue: string;
  name: string;
  /** The occurrence's time (ms). */
  at: number;
  /** The job's id: `name@ISO time`. */
  id: string;
  /** true when the job was already there (another scheduler published it first). */
  duplicate: boolean;
}

export interface SchedulerOptions {
  /** How often the loop looks for due occurrences (ms). Default 1000. */
  intervalMs?: number;
}

/**
 * Publishes the due occurrences of the schedules stored in the engine (R25). Several schedulers
 * over one storage (processes, servers) publish each occurrence once: its job id holds its
 * time (publish is idempotent by id, R4), and the stored last occurrence moves by compare and
 * set. `runOnce()` is one pass; `start()` runs passes every `intervalMs` on the broker's Clock.
 */
export class Scheduler {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly clock: Clock,
    private readonly publish: (
      queue: string,
      input: { id: string; payload: unknown },
    ) => Promise<{ duplicate: boolean }>,
    private readonly options: SchedulerOptions = {},
  ) {}

  /** One pass: publishes every due occurrence and records it; returns what it published. */
  async runOnce(): Promise<PublishedOccurrence[]> {
    const published: PublishedOccurrence[] = [];
    for (const schedule of await this.engine.listSchedules()) {
      const now = this.clock.now();
      const at = dueOccurrence(schedule, now);
      if (at === undefined) continue;
      const id = occurrenceId(schedule.name, at);
      // Publish first, then record: a pass that dies between the two is repeated by the next
      // one, and the id makes that repeat a duplicate.
      const { duplicate } = await this.publish(schedule.queue, { id, payload: schedule.payload });
      await this.engine.advanceSchedule(schedule.queue, schedule.name, schedule.lastAt, at);
      published.push({ queue: schedule.queue, name: schedule.name, at, id, duplicate });
    }
    return published;
  }

  /** Runs passes until `stop()`; a failing pass is reported to `onError` and the loop goes on. */
  start(onError: (error: unknown) => void = () => {}): void {
    if (this.loop !== undefined) return;
    const interval = this.options.intervalMs ?? 1000;
    const signal = this.stopping.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        try {
          await this.runOnce();
        } catch (error) {
          onError(error);
        }
        await this.clock.sleep(interval, signal);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }
}
