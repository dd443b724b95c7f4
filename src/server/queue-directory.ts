import type { Broker, Queue } from '../broker/index.js';
import {
  checkQueueName,
  checkSameOptions,
  NotFoundError,
  type QueueOptions,
  type QueueStats,
} from '../core/index.js';

/** Which of the visible queues `visibleStatsPage` reads (GET /v1/stats?contains=&offset=&limit=). */
export interface StatsPage {
  /** Only the names containing this, upper or lower case alike. Default: every name. */
  contains?: string;
  /** How many matching names (in name order) to skip. Default 0. */
  offset?: number;
  /** At most this many queues. Default: all. */
  limit?: number;
}

/**
 * The queues the API serves. Unlike `Broker.queue`, looking a queue up never creates it: only
 * `PUT /v1/queues/{name}` does, so a typo in a URL is a 404 rather than a new queue.
 */
export class QueueDirectory {
  private readonly open = new Map<string, Queue>();
  private readonly deletedListeners = new Set<(name: string) => void>();

  constructor(private readonly broker: Broker) {}

  /**
   * The named queue, or NOT_FOUND. `listed`: the names of a queue list the caller has just read
   * (one answer over every queue), so that opening each of them does not list them all again.
   */
  async existing(name: string, listed?: ReadonlySet<string>): Promise<Queue> {
    const cached = this.open.get(name);
    if (cached !== undefined) return cached;
    const missing = () => new NotFoundError(`queue ${name} does not exist`);
    if (listed !== undefined) {
      if (!listed.has(name)) throw missing();
      // Not broker.queue: a queue deleted since the list was read must not be created again.
      return this.remember(this.broker.handle(name));
    }
    // A name no queue can have is no queue (an SQS QueueUrl's, say), as it was never listed.
    try {
      checkQueueName(name);
    } catch {
      throw missing();
    }
    // Another process sharing the storage may have created it since: its row is read, that
    // one alone (NOT_FOUND while there is none). Not the list of every queue: with thousands
    // of them, the first request to each after a start read them all, one after the other.
    const queue = this.broker.handle(name);
    await queue.options();
    return this.remember(queue);
  }

  /**
   * Opens the queue, creating it when missing; `created` says which. The storage decides (a
   * queue opened here may have been deleted by another process since, or be created by one
   * at the same time), where the broker can say; otherwise it is read first.
   */
  async create(name: string, options: QueueOptions): Promise<{ queue: Queue; created: boolean }> {
    if (this.broker.ensureQueue !== undefined) {
      const { queue, created } = await this.broker.ensureQueue(name, options);
      return { queue: this.remember(queue), created };
    }
    const existed = (await this.broker.listQueues()).some((info) => info.name === name);
    const queue = await this.broker.queue(name, options);
    return { queue: this.remember(queue), created: !existed };
  }

  /**
   * The figures of every queue that `canSee` lets through, in name order: read together where
   * the broker can (Broker.statsOfQueues), else asked of each queue. A queue deleted since the
   * list was read is left out, not an error.
   */
  async visibleStats(canSee: (name: string) => boolean): Promise<[string, QueueStats][]> {
    return (await this.visibleStatsPage(canSee)).queues;
  }

  /**
   * A page of `visibleStats`: the visible queues whose names match `page.contains`, in name
   * order, cut to `page.offset` and `page.limit` before any figure is read, so that a page costs
   * what its queues cost. `total` counts every visible queue that matches; a queue deleted since
   * the list was read is left out of `queues` (and still counted).
   */
  async visibleStatsPage(
    canSee: (name: string) => boolean,
    page: StatsPage = {},
  ): Promise<{ total: number; queues: [string, QueueStats][] }> {
    const listed = new Set((await this.broker.listQueues()).map((info) => info.name));
    const needle = (page.contains ?? '').toLowerCase();
    const matching = [...listed]
      .filter((name) => canSee(name) && name.toLowerCase().includes(needle))
      .sort();
    const offset = page.offset ?? 0;
    const names = matching.slice(
      offset,
      page.limit === undefined ? undefined : offset + page.limit,
    );
    return { total: matching.length, queues: await this.statsOf(names, listed) };
  }

  /** The figures of `names` (all in `listed`), in their order, those deleted meanwhile left out. */
  private async statsOf(
    names: string[],
    listed: ReadonlySet<string>,
  ): Promise<[string, QueueStats][]> {
    if (names.length === 0) return [];
    if (this.broker.statsOfQueues !== undefined) {
      return [...(await this.broker.statsOfQueues(names))];
    }
    const all = await Promise.all(
      names.map(async (name): Promise<[string, QueueStats] | undefined> => {
        try {
          return [name, await (await this.existing(name, listed)).stats()];
        } catch (error) {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        }
      }),
    );
    return all.filter((entry) => entry !== undefined);
  }

  /**
   * Opens the queue only if the storage holds it (NOT_FOUND otherwise, nothing created), and
   * checks `options` against its stored ones as `create` would (CONFLICT).
   */
  async openStored(name: string, options: QueueOptions): Promise<Queue> {
    const queue = this.broker.handle(name);
    checkSameOptions(name, await queue.options(), options);
    return this.remember(queue);
  }

  async delete(name: string): Promise<boolean> {
    this.open.delete(name);
    const deleted = await this.broker.deleteQueue(name);
    if (deleted) for (const listener of this.deletedListeners) listener(name);
    return deleted;
  }

  /** Calls `listener` with the name of each queue deleted here; returns what stops it. */
  onDeleted(listener: (name: string) => void): () => void {
    this.deletedListeners.add(listener);
    return () => this.deletedListeners.delete(listener);
  }

  private remember(queue: Queue): Queue {
    this.open.set(queue.name, queue);
    return queue;
  }
}
