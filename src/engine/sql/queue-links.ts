import { type DeadLetterOrigin, NotFoundError } from '../../core/index.js';
import { hasGeneratedForm } from '../../core/text.js';
import type { BatchContext } from './executor.js';
import { type QueueAccess, wakeForTimedOutSessions } from './queue-access.js';
import { loadQueueRow, type QueueRow } from './queue-row.js';
import { backPosition } from './ready-bands.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';

/** A job row leaving its queue (R26): what the receiving queue keeps of it. */
export interface RowTransfer {
  id: string;
  /** The history as stored (JSON), with the attempt that just ended already appended. */
  history: string | null;
  /** Set when the job moves by dying; a move by `moveJobs` clears it. */
  origin: DeadLetterOrigin | undefined;
  /** Kept (R23): the job joins the back of this priority there. */
  priority: number;
  /** Kept (R24): the job joins the back of this group there, waiting if it has members. */
  grp: string | null;
}

/**
 * How a queue's operations reach the engine's other queues inside the same transaction
 * (R26): the job's row changes queue in one statement, and the receiving queue's row (loaded
 * and saved once per transaction, like any queue's) counts it. The SQL twin of the memory
 * engine's links between its `LeaseQueue`s.
 */
export class SqlQueueLinks {
  constructor(
    private readonly access: QueueAccess,
    private readonly connection: SqlConnection,
    private readonly batch: BatchContext,
    /** Wakes the receivers of a queue once the transaction commits. */
    private readonly wakeOnCommit: (queue: string) => Promise<void>,
  ) {}

  /**
   * Moves the job into `queue` as ready, at the back, deliveryCount 0. False when there is
   * no such queue or the id is present or remembered there (R4): the row stays untouched.
   */
  async admit(source: QueueRow, queue: string, now: number, job: RowTransfer): Promise<boolean> {
    if (queue === source.name) return false;
    const target = await this.targetRow(queue);
    if (target === undefined) return false;
    // The target may have sat idle: what it remembers (R4) is judged at the arrival, not at
    // its own last step, whose expired ids only that queue's next step deletes.
    const at = Math.max(now, target.queueTime);
    const [taken] = await this.connection.query<{ one: number }>(TAKEN_SQL, [
      queue,
      job.id,
      queue,
      job.id,
      at,
    ]);
    if (taken !== undefined) return false;
    const waits = job.grp !== null && (await this.groupHasMembers(queue, job.grp));
    const arrival = arrive(target, job, waits);
    await this.connection.run(
      `UPDATE leaseq_jobs SET queue = ?, seq = ?, group_seq = ?, state = ?, delivery_count = 0,
         available_at = ?, ready_pos = ?, ready_since = ?, token = NULL, delivered_at = NULL,
         deadline = NULL, session = NULL, dead_reason = NULL, dead_at = NULL, dead_seq = NULL,
         history = ?, origin_queue = ?, origin_reason = ?, origin_at = ?, expires_at = NULL,
         expiry_at = published_at + ?
       WHERE queue = ? AND id = ?`,
      [
        queue,
        arrival.seq,
        arrival.group_seq,
        arrival.state,
        at,
        arrival.ready_pos,
        at,
        job.history,
        job.origin?.queue ?? null,
        job.origin?.reason ?? null,
        job.origin?.at ?? null,
        arrival.retention,
        source.name,
        job.id,
      ],
    );
    await this.wakeOnCommit(queue);
    return true;
  }

  /**
   * The arrivals of one `moveJobs` call from `source` at `now` (R26): each job is judged as
   * `admit` judges it, from look-ups made for many jobs at once, and written many at once.
   * With `origin`, jobs that die into their dead-letter queue (R31's drops), which keep it.
   */
  arrivals(source: QueueRow, now: number, origin?: DeadLetterOrigin): Arrivals {
    return new Arrivals(
      this.connection,
      this.access.dialect,
      source,
      now,
      (queue) => this.targetRow(queue),
      this.wakeOnCommit,
      origin,
    );
  }

  /** Sessions of `queue` timed out in this transaction's step (R3): see wakeForTimedOutSessions. */
  async sessionsTimedOut(
    queue: string,
    ended: { ids: readonly string[]; released: boolean; nextEventAt: () => number },
  ): Promise<void> {
    await wakeForTimedOutSessions(this.access, this.connection, this.batch, queue, ended);
  }

  /** R28: once the transaction commits, this process hears that the delivery was cancelled. */
  deliveryCancelled(queue: string, token: number): void {
    this.batch.afterCommit(() => this.access.wakes.cancelled(queue, token));
  }

  /** R24: whether group `grp` of `queue` has a member that is not dead (a newcomer waits). */
  private async groupHasMembers(queue: string, grp: string): Promise<boolean> {
    const [row] = await this.connection.query<{ one: number }>(
      GROUP_MEMBER_SQL.replace('{grp}', '?'),
      [queue, grp],
    );
    return row !== undefined;
  }

  /** The receiving queue's row, or undefined when there is no such queue. */
  private async targetRow(queue: string): Promise<QueueRow | undefined> {
    const [exists] = await this.connection.query<{ one: number }>(
      'SELECT 1 AS one FROM leaseq_queues WHERE name = ?',
      [queue],
    );
    if (exists === undefined) return undefined;
    try {
      return await loadQueueRow(this.connection, this.batch, this.access.dialect, queue);
    } catch (error) {
      // Deleted by another process while this one waited for its lock: no such queue.
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}

/** A job `moveJobs` would send to `target`: what judging its arrival needs (R26). */
export interface Mover {
  id: string;
  target: string;
  /** Kept (R23): the job joins the back of this priority there. */
  priority: number;
  /** Kept (R24): the job joins the back of this group there, waiting if it has members. */
  grp: string | null;
}

/** A queue jobs of one `moveJobs` call go to, with what was looked up there. */
interface Destination {
  /** Undefined: no such queue, or the source itself; it takes nothing. */
  row: QueueRow | undefined;
  /** When arrivals are ready: `now`, or the queue's own time when later (as `admit`). */
  at: number;
  /** Ids looked up there, and those of them present or remembered there (R4). */
  looked: Set<string>;
  taken: Set<string>;
  /** Groups looked up there: whether each has a member that is not dead (R24). */
  groups: Map<string, boolean>;
}

/** A job's row as it arrives in its target. */
interface ArrivalRow {
  id: string;
  target: string;
  seq: number;
  group_seq: number | null;
  state: 'ready' | 'waiting';
  at: number;
  ready_pos: number | null;
  retention: number | null;
}

const ARRIVAL_COLUMNS = [
  ['id', 'text'],
  ['target', 'text'],
  ['seq', 'integer'],
  ['group_seq', 'integer'],
  ['state', 'text'],
  ['at', 'integer'],
  ['ready_pos', 'integer'],
  ['retention', 'integer'],
] as const;

/**
 * The arrivals of one `moveJobs` call (R26), judged exactly as `admit` judges one job: no
 * such queue, or the id present or remembered there, and it stays; else it joins the back,
 * waiting behind a member of its group. What decides that is looked up for many jobs at once
 * (`lookUp`), each job is judged in memory in the call's order (`take`: arrivals of the call
 * count as members for the ones after them), and the rows move many at once (`write`). Round
 * trips are what PostgreSQL's moves cost: a few statements a job made 200,000 take minutes.
 */
export class Arrivals {
  private readonly destinations = new Map<string, Destination>();
  private pending: ArrivalRow[] = [];

  constructor(
    private readonly connection: SqlConnection,
    private readonly dialect: SqlDialect,
    private readonly source: QueueRow,
    private readonly now: number,
    private readonly targetRow: (queue: string) => Promise<QueueRow | undefined>,
    private readonly wake: (queue: string) => Promise<void>,
    /** Where and why the jobs died, kept by them (a move by `moveJobs` clears it). */
    private readonly origin?: DeadLetterOrigin,
  ) {}

  /** Looks up what judging these jobs needs, where not yet known. */
  async lookUp(jobs: readonly Mover[]): Promise<void> {
    const ids = new Map<Destination, Set<string>>();
    const groups = new Map<Destination, Set<string>>();
    for (const job of jobs) {
      const place = await this.destination(job.target);
      if (place.row === undefined) continue;
      if (!place.looked.has(job.id)) addTo(ids, place, job.id);
      if (job.grp !== null && !place.groups.has(job.grp)) addTo(groups, place, job.grp);
    }
    for (const [place, named] of ids) {
      const list = [...named];
      for (const id of await this.takenIn(place, list)) place.taken.add(id);
      for (const id of list) place.looked.add(id);
    }
    for (const [place, named] of groups) {
      const list = [...named];
      const occupied = new Set(await this.occupiedIn(place, list));
      for (const grp of list) place.groups.set(grp, occupied.has(grp));
    }
  }

  /** Whether `lookUp` looked up what judging the job needs. */
  knows(job: Mover): boolean {
    const place = this.destinations.get(job.target);
    if (place === undefined) return false;
    if (place.row === undefined) return true;
    return place.looked.has(job.id) && (job.grp === null || place.groups.has(job.grp));
  }

  /**
   * Judges the job's arrival (looked up first): true when its target takes it, counted there
   * at once and its row moved at the next `write`.
   */
  take(job: Mover): boolean {
    const place = this.destinations.get(job.target);
    const target = place?.row;
    if (place === undefined || target === undefined || place.taken.has(job.id)) return false;
    const waits = job.grp !== null && place.groups.get(job.grp) === true;
    if (job.grp !== null) place.groups.set(job.grp, true);
    place.taken.add(job.id);
    this.pending.push({
      id: job.id,
      target: target.name,
      at: place.at,
      ...arrive(target, job, waits),
    });
    return true;
  }

  /**
   * Moves the rows of the jobs taken since the last write into their targets, as `admit` does
   * (the history stays as stored, the origin is set or cleared), and wakes the targets'
   * receivers.
   */
  async write(): Promise<void> {
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    const { origin } = this;
    const originColumns =
      origin === undefined
        ? 'origin_queue = NULL, origin_reason = NULL, origin_at = NULL'
        : 'origin_queue = ?, origin_reason = ?, origin_at = ?';
    const set = (value: (column: keyof ArrivalRow) => string, published: string) =>
      `queue = ${value('target')}, seq = ${value('seq')}, group_seq = ${value('group_seq')},
       state = ${value('state')}, delivery_count = 0, available_at = ${value('at')},
       ready_pos = ${value('ready_pos')}, ready_since = ${value('at')}, token = NULL,
       delivered_at = NULL, deadline = NULL, session = NULL, dead_reason = NULL, dead_at = NULL,
       dead_seq = NULL, ${originColumns},
       expires_at = NULL, expiry_at = ${published} + ${value('retention')}`;
    const origins = origin === undefined ? [] : [origin.queue, origin.reason, origin.at];
    if (this.dialect.setBased) {
      await this.connection.run(
        `UPDATE leaseq_jobs SET ${set((column) => `r.${column}`, 'leaseq_jobs.published_at')}
         FROM ${this.dialect.jsonRecords(ARRIVAL_COLUMNS)} AS r
         WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
        [...origins, JSON.stringify(rows), this.source.name],
      );
    } else {
      await this.connection.runEach(
        `UPDATE leaseq_jobs SET ${set(() => '?', 'published_at')} WHERE queue = ? AND id = ?`,
        rows.map((row) => [
          row.target,
          row.seq,
          row.group_seq,
          row.state,
          row.at,
          row.ready_pos,
          row.at,
          ...origins,
          row.retention,
          this.source.name,
          row.id,
        ]),
      );
    }
    for (const target of new Set(rows.map((row) => row.target))) await this.wake(target);
  }

  private async destination(queue: string): Promise<Destination> {
    let place = this.destinations.get(queue);
    if (place === undefined) {
      const row = queue === this.source.name ? undefined : await this.targetRow(queue);
      place = {
        row,
        at: row === undefined ? this.now : Math.max(this.now, row.queueTime),
        looked: new Set(),
        taken: new Set(),
        groups: new Map(),
      };
      this.destinations.set(queue, place);
    }
    return place;
  }

  /** Which of `ids` are present in the queue or remembered there at the arrival (R4). */
  private async takenIn(place: Destination, ids: readonly string[]): Promise<string[]> {
    const queue = (place.row as QueueRow).name;
    if (this.dialect.setBased) {
      const inList = this.dialect.inJsonList('id', 'text');
      const rows = await this.connection.query<{ id: string }>(
        `SELECT id FROM leaseq_jobs WHERE queue = ? AND ${inList}
         UNION SELECT id FROM leaseq_acked WHERE queue = ? AND ${inList} AND forget_at > ?`,
        [queue, JSON.stringify(ids), queue, JSON.stringify(ids), place.at],
      );
      return rows.map((row) => row.id);
    }
    const taken: string[] = [];
    for (const id of ids) {
      const [row] = await this.connection.query<{ one: number }>(TAKEN_SQL, [
        queue,
        id,
        queue,
        id,
        place.at,
      ]);
      if (row !== undefined) taken.push(id);
    }
    return taken;
  }

  /** Which of the groups `grps` have a member that is not dead in the queue (R24). */
  private async occupiedIn(place: Destination, grps: readonly string[]): Promise<string[]> {
    const queue = (place.row as QueueRow).name;
    if (this.dialect.setBased) {
      const rows = await this.connection.query<{ grp: string }>(
        `SELECT g.value AS grp FROM ${this.dialect.jsonList('text')} AS g
         WHERE (${GROUP_MEMBER_SQL.replace('{grp}', 'g.value')}) IS NOT NULL`,
        [JSON.stringify(grps), queue],
      );
      return rows.map((row) => row.grp);
    }
    const occupied: string[] = [];
    for (const grp of grps) {
      const [row] = await this.connection.query<{ one: number }>(
        GROUP_MEMBER_SQL.replace('{grp}', '?'),
        [queue, grp],
      );
      if (row !== undefined) occupied.push(grp);
    }
    return occupied;
  }
}

/** Whether an id is present in a queue, or remembered there at a time (R4). */
const TAKEN_SQL = `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND id = ?
  UNION ALL SELECT 1 AS one FROM leaseq_acked WHERE queue = ? AND id = ? AND forget_at > ?`;

/** A member of a group that is not dead, in a queue (R24); `{grp}` names the group. */
const GROUP_MEMBER_SQL = `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND grp = {grp} AND state <> 'dead' LIMIT 1`;

/**
 * A job joins `target` (R26), behind a member of its group when `waits` (R24): counted there,
 * at the back of its priority when ready (R23), and what its row takes there.
 */
function arrive(
  target: QueueRow,
  job: { id: string; priority: number; grp: string | null },
  waits: boolean,
): Pick<ArrivalRow, 'seq' | 'group_seq' | 'state' | 'ready_pos' | 'retention'> {
  if (hasGeneratedForm(job.id)) target.generatedFormSeen = true;
  const seq = target.nextSeq++;
  if (waits) target.waiting += 1;
  else target.ready += 1;
  // R30: its expiresAt stays behind (a time of the queue it left); the retention of the
  // queue it joins counts from its publish. Its expiry may be due at once: the next step looks.
  const retention = target.options.retention ?? null;
  if (retention !== null) target.nextEventAt = Math.min(target.nextEventAt, target.queueTime);
  return {
    seq,
    group_seq: job.grp === null ? null : seq,
    state: waits ? 'waiting' : 'ready',
    ready_pos: waits ? null : backPosition(target, job.priority),
    retention,
  };
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const values = map.get(key);
  if (values === undefined) map.set(key, new Set([value]));
  else values.add(value);
}
