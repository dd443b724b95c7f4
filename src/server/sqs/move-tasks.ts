import { randomUUID } from 'node:crypto';
import type { Queue } from '../../broker/index.js';
import { NotFoundError } from '../../core/index.js';

export type MoveTaskStatus = 'RUNNING' | 'COMPLETED' | 'CANCELLING' | 'CANCELLED' | 'FAILED';

/** One StartMessageMoveTask: jobs of a dead-letter queue moved on by `moveJobs` (R26). */
export interface MoveTask {
  readonly handle: string;
  readonly source: string;
  /** Where the jobs go; undefined: each back to the queue it died in. */
  readonly destination: string | undefined;
  /** Only jobs that died in these queues; undefined: any. */
  readonly origins: readonly string[] | undefined;
  /** Undefined: as fast as the storage allows. */
  readonly perSecond: number | undefined;
  readonly startedMs: number;
  readonly toMove: number;
  moved: number;
  status: MoveTaskStatus;
  failureReason?: string;
}

/** How many jobs one step moves when no rate is set: one transaction each. */
const STEP = 100;
/** Finished tasks kept per source for ListMessageMoveTasks (SQS lists at most 10). */
const KEPT_PER_SOURCE = 10;

/**
 * The message move tasks of this server: each a loop of `moveJobs` steps on the source
 * queue, at most `perSecond` jobs a second, until it has moved as many as the source held at
 * the start (new arrivals wait for the next task), a step moves nothing, or it is cancelled. One
 * running task per source. Tasks live in this process: a restart ends them (jobs already
 * moved stay moved).
 */
export class MoveTasks {
  private readonly tasks: MoveTask[] = [];
  private readonly stops = new Map<string, AbortController>();

  constructor(private readonly shutdown: AbortSignal) {}

  running(source: string): MoveTask | undefined {
    return this.tasks.find((task) => task.source === source && task.status === 'RUNNING');
  }

  /** The tasks of `source`, newest first. */
  of(source: string): MoveTask[] {
    return this.tasks.filter((task) => task.source === source).reverse();
  }

  byHandle(handle: string): MoveTask | undefined {
    return this.tasks.find((task) => task.handle === handle);
  }

  start(
    queue: Queue,
    settings: {
      destination: string | undefined;
      origins: readonly string[] | undefined;
      perSecond: number | undefined;
      toMove: number;
    },
    sourceArn: string,
  ): MoveTask {
    const task: MoveTask = {
      handle: Buffer.from(JSON.stringify({ taskId: randomUUID(), sourceArn })).toString(
        'base64url',
      ),
      source: queue.name,
      destination: settings.destination,
      origins: settings.origins,
      perSecond: settings.perSecond,
      startedMs: Date.now(),
      toMove: settings.toMove,
      moved: 0,
      status: 'RUNNING',
    };
    this.tasks.push(task);
    this.forgetOld(queue.name);
    const stop = new AbortController();
    this.stops.set(task.handle, stop);
    void this.run(queue, task, AbortSignal.any([stop.signal, this.shutdown])).finally(() =>
      this.stops.delete(task.handle),
    );
    return task;
  }

  /** Asks a running task to stop after the step in hand; false when it is not running. */
  cancel(task: MoveTask): boolean {
    if (task.status !== 'RUNNING') return false;
    task.status = 'CANCELLING';
    this.stops.get(task.handle)?.abort();
    return true;
  }

  /**
   * The queue `source` was deleted: its running task is FAILED and stops after the step in
   * hand, so that it never moves the messages of a queue made again under that name, nor keeps
   * that queue from a task of its own.
   */
  sourceDeleted(source: string): void {
    const task = this.running(source);
    if (task === undefined) return;
    task.status = 'FAILED';
    task.failureReason = deletedReason(source);
    this.stops.get(task.handle)?.abort();
  }

  private async run(queue: Queue, task: MoveTask, stop: AbortSignal): Promise<void> {
    const step = task.perSecond ?? STEP;
    try {
      while (!stop.aborted && task.moved < task.toMove) {
        const max = Math.min(step, task.toMove - task.moved);
        const moved = await queue.moveJobs({
          max,
          ...(task.destination === undefined ? {} : { to: task.destination }),
          ...(task.origins === undefined ? {} : { origins: task.origins }),
        });
        task.moved += moved;
        // A step moves the first message of each group (R26 leaves waiting ones); the next
        // ones are ready for the next step. Nothing moved: what is left cannot move. All
        // moved: COMPLETED now, not after a pause shown as RUNNING (a cancel in it would
        // call a finished task CANCELLED).
        if (moved === 0 || task.moved >= task.toMove) break;
        await pause(task.perSecond === undefined ? 0 : 1000, stop);
      }
      if (task.status !== 'FAILED') {
        task.status = task.status === 'CANCELLING' || stop.aborted ? 'CANCELLED' : 'COMPLETED';
      }
    } catch (error) {
      task.status = 'FAILED';
      // A step cut by its source's delete fails for that reason (sourceDeleted), and so does a
      // step that finds the source gone, deleted elsewhere (StartMessageMoveTask pins it).
      task.failureReason ??=
        error instanceof NotFoundError
          ? deletedReason(task.source)
          : error instanceof Error
            ? error.message
            : String(error);
    }
  }

  private forgetOld(source: string): void {
    const finished = this.tasks.filter(
      (task) => task.source === source && task.status !== 'RUNNING',
    );
    for (const task of finished.slice(0, Math.max(0, finished.length - KEPT_PER_SOURCE))) {
      this.tasks.splice(this.tasks.indexOf(task), 1);
    }
  }
}

/** Why a task whose source queue was deleted failed. */
function deletedReason(source: string): string {
  return `The queue ${source} was deleted.`;
}

/** Waits `ms` (0: lets other work run first), or until `stop` aborts. */
function pause(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    }
  });
}
