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
 * over one storage (processes, servers) publish each occurrence once: the stored last
 * occurrence moves by compare and set, and only the scheduler that moved it publishes (its job
 * id holds its time). `runOnce()` is one pass; `start()` runs passes every `intervalMs` on the
 * broker's Clock.
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
      const input = { id, payload: schedule.payload };
      const { queue, name, lastAt } = schedule;
      let duplicate: boolean;
      // Only the scheduler whose compare and set moves lastAt publishes: the id alone would not
      // stop a second one once the first occurrence's job was acked and forgotten.
      if (this.engine.transaction !== undefined && this.engine.capabilities.transactions) {
        // Both in one transaction: no pass can record an occurrence and die before publishing it.
        const result = await this.engine.transaction(async (tx) =>
          (await tx.advanceSchedule(queue, name, lastAt, at))
            ? tx.publish(queue, now, input)
            : undefined,
        );
        if (result === undefined) continue;
        duplicate = result.duplicate;
      } else {
        // One process (memory): what it records, it publishes, or it is gone with the process.
        if (!(await this.engine.advanceSchedule(queue, name, lastAt, at))) continue;
        ({ duplicate } = await this.publish(queue, input));
      }
      published.push({ queue, name, at, id, duplicate });
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
