/**
 * One system under test, as the workloads see it. Every call is durable when it resolves (on
 * the systems that offer it: leaseq's memory engine keeps nothing across a crash), and every
 * consumer acks each job on its own.
 */
export interface Payload {
  n: number;
  body: string;
}

/** About 100 bytes of JSON: `{"n":12345,"body":"xxx…"}`. */
export function payload(n: number): Payload {
  return { n, body: 'x'.repeat(Math.max(0, 84 - String(n).length)) };
}

export interface Subject {
  /** The server's name and version, for the machine line (none for in-process storage). */
  server(): Promise<string | undefined>;
  /** The most jobs one publish batch takes. */
  readonly batchSize: number;
  /** Makes an empty queue of that name; `latency`: the queue of the idle-consumer workload. */
  create(name: string, options?: { latency?: boolean }): Promise<void>;
  /** One batch with the system's batch API. */
  publishBatch(name: string, payloads: readonly Payload[]): Promise<void>;
  /** One job on its own. */
  publish(name: string, payload: Payload): Promise<void>;
  /**
   * Consumes and acks up to `count` jobs, one job per receive and per ack, with `concurrency`
   * jobs in hand at most; gives up at `deadline` (performance.now()). Resolves with the number
   * acknowledged, once the system has the acks.
   */
  drain(name: string, count: number, concurrency: number, deadline: number): Promise<number>;
  /**
   * Like `drain`, through the system's own consumer library with an empty handler: leaseq's
   * `work()`, BullMQ's `Worker`, an amqplib consumer with a prefetch, pg-boss's `work` with a
   * batch size. At most `concurrency` jobs in hand; gives up at `deadline`.
   */
  work(name: string, count: number, concurrency: number, deadline: number): Promise<number>;
  /**
   * Starts one idle consumer: `onJob` runs first thing in the handler, `onSettled` after the
   * ack. Resolves, once the consumer is listening, with the function that stops it.
   */
  consume(
    name: string,
    onJob: (payload: Payload) => void,
    onSettled: (payload: Payload) => void,
  ): Promise<() => Promise<void>>;
  /** Deletes the queue and everything in it. */
  remove(name: string): Promise<void>;
  close(): Promise<void>;
}

/** A dependency of bench/package.json, loaded at run time (the package's typecheck needs none). */
export async function loadDependency<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    throw new Error(`cannot load ${name}: run \`npm ci --prefix bench\` (${String(error)})`);
  }
}

/** Resolves at `deadline` (a performance.now() time), at once when it has passed. */
export function untilDeadline(deadline: number): { promise: Promise<void>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadline - performance.now()));
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<{ rows: Record<string, string | undefined>[] }>;
  end(): Promise<void>;
}

async function withPostgres<T>(url: string, use: (client: PgClient) => Promise<T>): Promise<T> {
  const pg = await loadDependency<{
    default: { Client: new (options: { connectionString: string }) => PgClient };
  }>('pg');
  const client = new pg.default.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * `SHOW server_version` of a PostgreSQL server, and the settings that decide whether a commit
 * is on disk when it returns (`fsync`, `synchronous_commit`).
 */
export function postgresVersion(url: string): Promise<string> {
  return withPostgres(url, async (client) => {
    const show = async (setting: string) =>
      (await client.query(`SHOW ${setting}`)).rows[0]?.[setting] ?? '?';
    return `PostgreSQL ${await show('server_version')} with fsync ${await show('fsync')} and synchronous_commit ${await show('synchronous_commit')}`;
  });
}

/**
 * VACUUMs the whole database, so that a run does not start from the dead rows of every run
 * before it (every job leaves some behind, in leaseq's tables and pg-boss's alike), then takes
 * a checkpoint, so that no run pays for writing out the pages the runs before it dirtied (a
 * timed checkpoint would otherwise fall in whichever run is going every 5 minutes); answers
 * whether autovacuum, which removes dead rows as it goes where it is on, is on.
 */
export function vacuumPostgres(url: string): Promise<string> {
  return withPostgres(url, async (client) => {
    await client.query('VACUUM');
    await client.query('CHECKPOINT');
    return (await client.query('SHOW autovacuum')).rows[0]?.autovacuum ?? '?';
  });
}
