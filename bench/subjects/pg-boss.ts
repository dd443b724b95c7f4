import {
  loadDependency,
  type Payload,
  postgresVersion,
  type Subject,
  untilDeadline,
} from './subject.js';

// The part of pg-boss's API this file uses (the package's typecheck does not install it).
interface Job {
  id: string;
  data: Payload;
}
interface Boss {
  on(event: 'error', listener: (error: Error) => void): void;
  start(): Promise<unknown>;
  stop(options: { graceful: boolean; timeout: number }): Promise<void>;
  createQueue(name: string, options?: { notify?: boolean }): Promise<void>;
  deleteQueue(name: string): Promise<void>;
  insert(name: string, jobs: { data: Payload }[]): Promise<unknown>;
  send(name: string, data: Payload): Promise<string | null>;
  fetch(name: string): Promise<Job[]>;
  complete(name: string, id: string): Promise<unknown>;
  getJobById(name: string, id: string): Promise<{ state: string } | null>;
  work(name: string, handler: (jobs: Job[]) => Promise<void>): Promise<string>;
  work(
    name: string,
    options: { batchSize: number; pollingIntervalSeconds: number; burstWhenBatchFull: boolean },
    handler: (jobs: Job[]) => Promise<void>,
  ): Promise<string>;
  offWork(name: string, options: { id: string; wait: boolean }): Promise<void>;
}
interface PgBossModule {
  PgBoss: new (options: { connectionString: string; useListenNotify: boolean }) => Boss;
}

/**
 * pg-boss with its defaults (queue policy, retention, pool of 10, batch size 1), with one
 * exception for the latency workload: its worker polls every 2 s by default, so the W3 queue
 * is created with `notify: true` and the instance listens (`useListenNotify`), pg-boss's own
 * low-latency delivery. The drain fetches and completes one job at a time (`fetch`, `complete`):
 * the worker's default polling would take one job per interval.
 */
export async function openPgBoss(postgresUrl: string): Promise<Subject> {
  const { PgBoss } = await loadDependency<PgBossModule>('pg-boss');
  const boss = new PgBoss({ connectionString: postgresUrl, useListenNotify: true });
  boss.on('error', (error) => console.error(`pg-boss: ${error.message}`));
  await boss.start();
  return new PgBossSubject(boss, postgresUrl);
}

export class PgBossSubject implements Subject {
  readonly batchSize = 1000;
  constructor(
    private readonly boss: Boss,
    private readonly postgresUrl: string,
  ) {}

  server(): Promise<string> {
    return postgresVersion(this.postgresUrl);
  }

  async create(name: string, options: { latency?: boolean } = {}): Promise<void> {
    await this.boss.deleteQueue(name);
    await this.boss.createQueue(name, options.latency === true ? { notify: true } : {});
  }

  async publishBatch(name: string, payloads: readonly Payload[]): Promise<void> {
    await this.boss.insert(
      name,
      payloads.map((data) => ({ data })),
    );
  }

  async publish(name: string, payload: Payload): Promise<void> {
    await this.boss.send(name, payload);
  }

  async drain(name: string, count: number, concurrency: number, deadline: number) {
    let taken = 0;
    let completed = 0;
    const consumer = async () => {
      while (taken < count && performance.now() < deadline) {
        taken += 1;
        const [job] = await this.boss.fetch(name);
        if (job === undefined) return;
        await this.boss.complete(name, job.id);
        completed += 1;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, consumer));
    return completed;
  }

  /**
   * pg-boss's worker with a batch of `concurrency` jobs per fetch, completed together after the
   * handler; it fetches again at once while batches come back full (`burstWhenBatchFull`, which
   * it ignores for a batch of 1), otherwise after its shortest polling interval, 0.5 s.
   */
  async work(name: string, count: number, concurrency: number, deadline: number) {
    let handled = 0;
    let finished!: () => void;
    const allHandled = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const id = await this.boss.work(
      name,
      { batchSize: concurrency, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true },
      async (jobs) => {
        handled += jobs.length;
        if (handled >= count) finished();
      },
    );
    const timer = untilDeadline(deadline);
    await Promise.race([allHandled, timer.promise]);
    timer.cancel();
    // Waits for the batch in hand: its jobs are completed once offWork returns.
    await this.boss.offWork(name, { id, wait: true });
    return Math.min(handled, count);
  }

  async consume(
    name: string,
    onJob: (payload: Payload) => void,
    onSettled: (payload: Payload) => void,
  ): Promise<() => Promise<void>> {
    const id = await this.boss.work(name, async ([job]) => {
      if (job === undefined) return;
      onJob(job.data);
      // pg-boss completes the job after the handler returns, and no event tells when: the job
      // is settled once pg-boss reads it back completed. Settled any sooner, the next job would
      // be sent while the worker still completes this one, and wait for it.
      this.completed(name, job.id).then(
        () => onSettled(job.data),
        (error) => console.error(`pg-boss: job ${job.id} not read back: ${String(error)}`),
      );
    });
    return () => this.boss.offWork(name, { id, wait: true });
  }

  /** Resolves once the job is no longer active: completed (or failed, or gone). */
  private async completed(name: string, id: string): Promise<void> {
    for (;;) {
      const job = await this.boss.getJobById(name, id);
      if (job === null || job.state !== 'active') return;
    }
  }

  async remove(name: string): Promise<void> {
    await this.boss.deleteQueue(name);
  }

  close(): Promise<void> {
    return this.boss.stop({ graceful: true, timeout: 5000 });
  }
}
