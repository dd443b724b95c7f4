import type { Broker } from '../../broker/index.js';
import { UnsupportedError } from '../../core/index.js';

/** What SQS knows of a queue beyond leaseq's options. Times in epoch ms. */
export interface QueueMeta {
  /** SQS attributes as set, for those leaseq options do not hold (DelaySeconds, Policy…). */
  attributes: Record<string, string>;
  tags: Record<string, string>;
  createdMs: number;
  modifiedMs: number;
  /**
   * A FIFO queue's key that its job ids are derived with besides the de-duplication id
   * (`fifoMessageId`), so no two queues' messages share a job id (a dead-letter queue two
   * queues share takes the messages of both): its name and a random part, so that a queue made
   * again under a deleted one's name does not take the ids of that one's messages, which may
   * still be in a dead-letter queue (queues created by an earlier leaseq have the name alone).
   * FIFO queues created without one keep the ids they always had.
   */
  fifoIdKey?: string;
  /**
   * The dead-letter queues a SetQueueAttributes replaced or removed, newest first: the
   * messages that died into one stay there (R26) and are still the queue's, for a stale
   * receipt handle and for FIFO de-duplication.
   */
  formerDeadLetterQueues?: FormerDeadLetterQueue[];
}

/** A queue that was a queue's dead-letter queue until `until` (the broker's time, ms). */
export interface FormerDeadLetterQueue {
  queue: string;
  until: number;
}

/** Where queue metadata lives: a table beside the queues on SQL engines, memory otherwise. */
export interface QueueCatalog {
  get(name: string): Promise<QueueMeta | undefined>;
  put(name: string, meta: QueueMeta): Promise<void>;
  delete(name: string): Promise<void>;
  /**
   * Reads a queue's metadata (undefined: none yet), changes it and writes it back, with no
   * other change of it in between, so that concurrent changes (TagQueue, SetQueueAttributes…)
   * each keep what the others did. What `change` throws changes nothing.
   */
  update(name: string, change: (meta: QueueMeta | undefined) => QueueMeta): Promise<QueueMeta>;
  /**
   * Runs `work` with no other `exclusive` or `update` of the same queue name in this process
   * meanwhile: a CreateQueue that makes a queue and then writes its metadata is not seen
   * half done by another CreateQueue of the name.
   */
  exclusive<T>(name: string, work: () => Promise<T>): Promise<T>;
}

const TABLE = 'leaseq_sqs_queues';

/**
 * The metadata of brokers without transactions (memory), per broker: every catalog of one
 * broker (several servers over one storage in one process) sees the same, as over SQL.
 */
const IN_MEMORY = new WeakMap<Broker, Map<string, QueueMeta>>();

/**
 * The catalog of a broker: in its database when it has transactions (so metadata is as
 * durable and as shared as the queues), else in this process (the memory engine's lifetime).
 */
export class BrokerCatalog implements QueueCatalog {
  private mode: Promise<'sql' | 'memory'> | undefined;
  private readonly memory: Map<string, QueueMeta>;
  /** Per queue name, the end of the last `exclusive` work begun (it never rejects). */
  private readonly turns = new Map<string, Promise<void>>();

  constructor(private readonly broker: Broker) {
    let memory = IN_MEMORY.get(broker);
    if (memory === undefined) {
      memory = new Map();
      IN_MEMORY.set(broker, memory);
    }
    this.memory = memory;
  }

  async get(name: string): Promise<QueueMeta | undefined> {
    if ((await this.storage()) === 'memory') return this.memory.get(name);
    const rows = await this.broker.transaction((tx) =>
      tx.query<{ meta: string }>(`select meta from ${TABLE} where name = ?`, [name]),
    );
    const text = rows[0]?.meta;
    return text === undefined ? undefined : (JSON.parse(text) as QueueMeta);
  }

  async put(name: string, meta: QueueMeta): Promise<void> {
    if ((await this.storage()) === 'memory') {
      this.memory.set(name, structuredClone(meta));
      return;
    }
    await this.broker.transaction((tx) =>
      tx.run(
        `insert into ${TABLE} (name, meta) values (?, ?) on conflict (name) do update set meta = excluded.meta`,
        [name, JSON.stringify(meta)],
      ),
    );
  }

  async delete(name: string): Promise<void> {
    if ((await this.storage()) === 'memory') {
      this.memory.delete(name);
      return;
    }
    await this.broker.transaction((tx) => tx.run(`delete from ${TABLE} where name = ?`, [name]));
  }

  update(name: string, change: (meta: QueueMeta | undefined) => QueueMeta): Promise<QueueMeta> {
    return this.exclusive(name, async () => {
      if ((await this.storage()) === 'memory') {
        const next = change(this.memory.get(name));
        this.memory.set(name, structuredClone(next));
        return next;
      }
      return this.broker.transaction(async (tx) => {
        // Locks the row before reading it (PostgreSQL; SQLite locks the database), so that a
        // change made through another server of the storage waits rather than being lost. A
        // queue made outside SQS has no row yet: one is put first (`null`, none), else two
        // servers would both read none and the second write over the first.
        await tx.run(
          `insert into ${TABLE} (name, meta) values (?, 'null') on conflict (name) do nothing`,
          [name],
        );
        await tx.run(`update ${TABLE} set meta = meta where name = ?`, [name]);
        const rows = await tx.query<{ meta: string }>(`select meta from ${TABLE} where name = ?`, [
          name,
        ]);
        const text = rows[0]?.meta;
        const stored = text === undefined ? null : (JSON.parse(text) as QueueMeta | null);
        const next = change(stored ?? undefined);
        await tx.run(
          `insert into ${TABLE} (name, meta) values (?, ?) on conflict (name) do update set meta = excluded.meta`,
          [name, JSON.stringify(next)],
        );
        return next;
      });
    });
  }

  async exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const before = this.turns.get(name) ?? Promise.resolve();
    const result = before.then(work);
    const done = result.then(
      () => {},
      () => {},
    );
    this.turns.set(name, done);
    try {
      return await result;
    } finally {
      // The last in line leaves no entry behind.
      if (this.turns.get(name) === done) this.turns.delete(name);
    }
  }

  private storage(): Promise<'sql' | 'memory'> {
    this.mode ??= this.detect();
    // A failure (storage down) is not remembered: the next call tries again.
    this.mode.catch(() => {
      this.mode = undefined;
    });
    return this.mode;
  }

  private async detect(): Promise<'sql' | 'memory'> {
    try {
      await this.broker.transaction((tx) =>
        tx.run(`create table if not exists ${TABLE} (name text primary key, meta text not null)`),
      );
      return 'sql';
    } catch (error) {
      if (error instanceof UnsupportedError) return 'memory';
      throw error;
    }
  }
}
