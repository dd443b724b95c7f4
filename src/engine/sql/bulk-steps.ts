import type { MoveJobsOperation } from '../../core/index.js';
import type { QueueOps } from './queue-ops.js';
import { bandHead, bandTail, readyRanges } from './ready-bands.js';

/**
 * How many jobs one step of a redrive or purge takes, where it takes steps (see
 * SqlQueue.inSteps). On the 2-core machine of the benchmarks, loaded, a step of a redrive held
 * SQLite's process for 15–70 ms (130 ms at worst), and every step pays a commit and, durable,
 * its sync.
 */
export const BULK_STEP = 1000;

/**
 * How many jobs `moveJobs` looks up, judges and writes together; one step of a call that takes
 * steps (see MoveRun).
 */
export const MOVE_CHUNK = BULK_STEP;

/**
 * Most ready jobs a step of `moveJobs` renumbers to close the gaps the jobs it moved left (those
 * that stay in front of them move back). Beyond it, each step would cost more the further the
 * call went: the rest of the call is one step, whose gaps are closed once.
 */
export const STEP_RENUMBER_BOUND = 4 * MOVE_CHUNK;

/**
 * The error that ends a call taking steps, with `doneCount`: how many jobs the steps committed
 * before it redrove, purged or moved (0 where it ended the first step). A copy of the error,
 * of its class, where it is an Error: one error may be every waiting call's answer (the engine
 * closing refuses them all with one), and the count is this call's alone.
 */
export function withDoneCount<E>(error: E, doneCount: number): E {
  if (!(error instanceof Error)) return error;
  return Object.create(Object.getPrototypeOf(error) as object, {
    ...Object.getOwnPropertyDescriptors(error),
    // Where the stack is an accessor of the original's own, its text.
    stack: { value: error.stack, writable: true, enumerable: false, configurable: true },
    doneCount: { value: doneCount, enumerable: true, writable: false, configurable: true },
  }) as E;
}

/** A ready or delayed job as `moveJobs` looks at it. */
export interface MovableRow {
  id: string;
  state: 'ready' | 'delayed';
  origin_queue: string | null;
  priority: number;
  grp: string | null;
  /** Its place in ready (null when delayed). */
  ready_pos: number | null;
}

export const MOVABLE_COLUMNS = 'id, state, origin_queue, priority, grp, ready_pos';

/** A band of ready positions (a priority, R23) a call reads, front first: after `after`. */
interface BandWalk {
  priority: number;
  after: number;
  /** The job read last, at `after` when read: where the next step finds the place again. */
  lastId?: string;
  done: boolean;
}

/**
 * Where a call reads its jobs from: those named, in order; or the queue's ready jobs, band by
 * band, then its delayed ones after (available_at, seq): of either, those published before the
 * call began (`seqBelow`), not those published, nor the members that went on, meanwhile. Where
 * time passed between its steps, the bands once more after the delayed jobs (see `sweep`).
 */
type Walk =
  | { kind: 'named'; ids: readonly string[]; next: number }
  | {
      kind: 'queue';
      seqBelow: number;
      /** The queue's time when the call set out what to read. */
      startedAt: number;
      bands: BandWalk[];
      delayed: { at: number; seq: number; done: boolean };
      /** The bands were set out again, once the delayed jobs were read (see `sweep`). */
      swept: boolean;
    };

/**
 * Where one `moveJobs` call stands (R26), from one step to the next where it takes steps, each a
 * transaction of its own: the jobs it found, in its order — the ready ones front first, then
 * the delayed ones, of the queue as it was when the call began; or those named, as named — read
 * a chunk at a time; the members that went on as the jobs before them moved, looked at after all
 * of those; and the jobs looked at. What one step read and left for the next is read again at
 * the next step's start: another call may have taken, moved or ended it meanwhile.
 *
 * A step's changes to this state are undone if its transaction rolls back (`begin`), since the
 * step may then run again.
 */
export class MoveRun {
  /** Jobs moved so far. */
  moved = 0;
  /** Nothing more to move: everything found was looked at, or `max` were moved. */
  done = false;
  private step = 0;
  /** Ids looked at, with the step that looked (see `begin`). */
  private readonly seen = new Map<string, number>();
  /** Members that went on (R24) and wait for their turn after the jobs found, by step. */
  private readonly followerIds = new Map<string, number>();
  private found: MovableRow[] = [];
  private foundAt = 0;
  private followers: MovableRow[] = [];
  private followersAt = 0;
  private walk: Walk | undefined;
  private readonly named: ReadonlySet<string> | undefined;

  constructor(readonly op: MoveJobsOperation) {
    this.named = op.ids === undefined ? undefined : new Set(op.ids);
  }

  /**
   * A member that went on is looked at (after the jobs found) only if named, when ids are; else
   * only if published before the call began, as the jobs it reads (a step of its own since, R20,
   * may find one published meanwhile next in its group).
   */
  follows(job: { id: string; seq: number }): boolean {
    if (this.named !== undefined) return this.named.has(job.id);
    return this.walk?.kind !== 'queue' || job.seq < this.walk.seqBelow;
  }

  /** Starts a step; answers what undoes its changes to this state. */
  begin(): () => void {
    this.step += 1;
    const step = this.step;
    const { moved, done, found, foundAt, followers, followersAt } = this;
    const foundLength = found.length;
    const followersLength = followers.length;
    const walk = cloneWalk(this.walk);
    return () => {
      this.moved = moved;
      this.done = done;
      found.length = foundLength;
      followers.length = followersLength;
      Object.assign(this, { found, foundAt, followers, followersAt, walk });
      for (const ids of [this.seen, this.followerIds]) {
        for (const [id, by] of ids) if (by === step) ids.delete(id);
      }
      this.step = step - 1;
    };
  }

  /**
   * At a step's start: the first sets out what to read (the bands of ready as they are now);
   * a later one reads again the rows an earlier one read and did not look at.
   */
  async resume(ops: QueueOps): Promise<void> {
    if (this.walk === undefined) {
      const { ids } = this.op;
      this.walk =
        ids !== undefined
          ? { kind: 'named', ids, next: 0 }
          : {
              kind: 'queue',
              seqBelow: ops.q.nextSeq,
              startedAt: ops.q.queueTime,
              bands: readyRanges(ops.q)
                .filter((range) => range.size > 0)
                .map((range) => ({ priority: range.priority, after: range.head - 1, done: false })),
              delayed: { at: Number.MIN_SAFE_INTEGER, seq: Number.MIN_SAFE_INTEGER, done: false },
              swept: false,
            };
      return;
    }
    await this.findPlace(ops);
    this.found = await ops.movableJobs(this.found.slice(this.foundAt).map((row) => row.id));
    this.foundAt = 0;
    this.followers = await ops.movableJobs(
      this.followers.slice(this.followersAt).map((row) => row.id),
    );
    this.followersAt = 0;
  }

  /** The next `count` jobs to look at, in order, read where need be; none are taken. */
  async upcoming(ops: QueueOps, count: number): Promise<MovableRow[]> {
    this.found = this.found.slice(this.foundAt);
    this.foundAt = 0;
    while (this.found.length < count && !this.walkDone()) {
      for (const row of await this.read(ops, count - this.found.length)) this.found.push(row);
    }
    const next = this.found.slice(0, count);
    if (next.length < count && this.walkDone()) {
      next.push(...this.followers.slice(this.followersAt, this.followersAt + count - next.length));
    }
    return next;
  }

  /**
   * At a step's end, reads one row ahead where the queue's ready and delayed jobs are read, so
   * that `exhausted` knows when none is left (a band read to its last row does not say so).
   * Named ids are read a chunk at a time: only ids not read yet are left.
   */
  async lookAhead(ops: QueueOps): Promise<void> {
    if (this.walk?.kind === 'queue') await this.upcoming(ops, 1);
  }

  /** The next job to look at among those read (a member that went on only after all found). */
  peek(): MovableRow | undefined {
    if (this.foundAt < this.found.length) return this.found[this.foundAt];
    if (!this.walkDone()) return undefined;
    return this.followers[this.followersAt];
  }

  /** Takes the job `peek` answered. */
  take(): void {
    if (this.foundAt < this.found.length) this.foundAt += 1;
    else this.followersAt += 1;
  }

  hasSeen(id: string): boolean {
    return this.seen.has(id);
  }

  see(id: string): void {
    this.seen.set(id, this.step);
  }

  /** A member that went on as the one before it moved: looked at after every job found. */
  follow(row: MovableRow): void {
    this.followers.push(row);
    this.followerIds.set(row.id, this.step);
  }

  /** Everything found, and every member that went on, was looked at. */
  exhausted(): boolean {
    return (
      this.walkDone() &&
      this.foundAt >= this.found.length &&
      this.followersAt >= this.followers.length
    );
  }

  /**
   * Where the call reads priority `priority`'s band: the last position read. Gaps up to it are
   * closed from the head and those after it from the back (see closeReadyGaps), so no job is
   * moved across it: the rows not read yet stay after it, those read stay up to it. Undefined
   * where the call does not read that band.
   */
  readPlace(priority: number): number | undefined {
    if (this.walk?.kind !== 'queue') return undefined;
    return this.walk.bands.find((band) => band.priority === priority)?.after;
  }

  /**
   * Finds again where the band being read stands. Other calls between steps move ready jobs
   * without changing their order (a cancel closes its gap by moving the jobs on its shorter
   * side, another move closes its gaps), so the place read up to is that of the job read last,
   * wherever it is now; gone from the band, the band is read again from its head, the jobs
   * looked at already passed over.
   */
  private async findPlace(ops: QueueOps): Promise<void> {
    const walk = this.walk;
    if (walk?.kind !== 'queue') return;
    const band = walk.bands.find((each) => !each.done);
    if (band !== undefined) await placeAgain(ops, band);
  }

  /**
   * Once the delayed jobs are read, where the queue's time moved since the call began: delayed
   * jobs it held then came due meanwhile (R3) and joined the back of their bands, after the
   * place the call read a band up to, or in a band no ready job had then; read as delayed ones,
   * they would have moved in one step. Every band is read once more from that place (from its
   * head where the call did not read it, or the job read last is gone), for the jobs of the
   * call not looked at yet: those ready since the call began (a job that came due has its
   * `available_at` as `ready_since`, after the time the call began at). Every job ready before
   * was read by the first pass; read again, the jobs looked at and left (the target holding
   * their ids, say) were passed over one by one, a step as long as their band. Once is
   * enough: a delayed job that came due later was still delayed when the delayed ones were
   * read, and was read then.
   */
  private async sweep(ops: QueueOps, walk: Extract<Walk, { kind: 'queue' }>): Promise<void> {
    if (walk.swept || ops.q.queueTime <= walk.startedAt) return;
    walk.swept = true;
    const bands: BandWalk[] = [];
    for (const range of readyRanges(ops.q)) {
      if (range.size === 0) continue;
      const read = walk.bands.find((band) => band.priority === range.priority);
      const band: BandWalk = { priority: range.priority, after: range.head - 1, done: false };
      if (read?.lastId !== undefined) band.lastId = read.lastId;
      await placeAgain(ops, band);
      bands.push(band);
    }
    walk.bands = bands;
  }

  private walkDone(): boolean {
    const walk = this.walk;
    if (walk === undefined) return false;
    if (walk.kind === 'named') return walk.next >= walk.ids.length;
    return walk.delayed.done && walk.bands.every((band) => band.done);
  }

  /**
   * Up to `count` more jobs found (fewer, even none, where some are no longer movable; more
   * where the bands are read once more, see there).
   */
  private async read(ops: QueueOps, count: number): Promise<MovableRow[]> {
    const walk = this.walk;
    if (walk === undefined) return [];
    // A member that went on waits for its turn after the jobs found (as when every job was
    // read at the start, while it still waited).
    const notFollowing = (row: MovableRow) => !this.followerIds.has(row.id);
    if (walk.kind === 'named') {
      const ids = walk.ids.slice(walk.next, walk.next + MOVE_CHUNK);
      walk.next += ids.length;
      return (await ops.movableJobs(ids)).filter(notFollowing);
    }
    const band = walk.bands.find((each) => !each.done);
    if (band !== undefined) {
      // Up to the band's back, not on into the next band: its jobs come in their own turn, and
      // where the call reads them decides how the gaps of their moves are closed (readPlace).
      // Read once more (see sweep): only the jobs ready since the call began, and a chunk at a
      // time even for fewer (the jobs looked at that came due since pass over in it, not one
      // statement each); those beyond `count` wait among the jobs found.
      const since = walk.swept ? [walk.startedAt] : [];
      const limit = walk.swept ? Math.max(count, MOVE_CHUNK) : count;
      const rows = await ops.c.query<MovableRow>(
        `SELECT ${MOVABLE_COLUMNS} FROM leaseq_jobs
         WHERE queue = ? AND state = 'ready' AND ready_pos > ? AND ready_pos <= ? AND seq < ?${
           walk.swept ? ' AND ready_since > ?' : ''
         }
         ORDER BY ready_pos LIMIT ?`,
        [ops.q.name, band.after, bandTail(ops.q, band.priority), walk.seqBelow, ...since, limit],
      );
      const last = rows[rows.length - 1];
      if (last !== undefined) {
        band.after = Number(last.ready_pos);
        band.lastId = last.id;
      }
      if (rows.length < limit) band.done = true;
      // Read again from the head (see findPlace): those looked at, or still to be, pass over.
      const pending = new Set(this.found.slice(this.foundAt).map((row) => row.id));
      return rows.filter(
        (row) => notFollowing(row) && !this.seen.has(row.id) && !pending.has(row.id),
      );
    }
    const { delayed } = walk;
    if (delayed.done) return [];
    const rows = await ops.c.query<MovableRow & { available_at: number; seq: number }>(
      `SELECT ${MOVABLE_COLUMNS}, available_at, seq FROM leaseq_jobs
       WHERE queue = ? AND state = 'delayed' AND (available_at, seq) > (?, ?) AND seq < ?
       ORDER BY available_at, seq LIMIT ?`,
      [ops.q.name, delayed.at, delayed.seq, walk.seqBelow, count],
    );
    const last = rows[rows.length - 1];
    if (last !== undefined) {
      delayed.at = Number(last.available_at);
      delayed.seq = Number(last.seq);
    }
    if (rows.length < count) {
      delayed.done = true;
      await this.sweep(ops, walk);
    }
    return rows
      .map(({ available_at: _at, seq: _seq, ...row }) => row as MovableRow)
      .filter(notFollowing);
  }
}

/**
 * Where `band` is read up to now: at the job read last, wherever it is (see findPlace); before
 * the band's head when that job is gone from the band, or none was read.
 */
async function placeAgain(ops: QueueOps, band: BandWalk): Promise<void> {
  if (band.lastId === undefined) return;
  const [row] = await ops.c.query<{ ready_pos: number | string | null; priority: number }>(
    `SELECT ready_pos, priority FROM leaseq_jobs WHERE queue = ? AND id = ? AND state = 'ready'`,
    [ops.q.name, band.lastId],
  );
  band.after =
    row !== undefined && Number(row.priority) === band.priority
      ? Number(row.ready_pos)
      : bandHead(ops.q, band.priority) - 1;
}

function cloneWalk(walk: Walk | undefined): Walk | undefined {
  if (walk === undefined || walk.kind === 'named') return walk && { ...walk };
  return { ...walk, bands: walk.bands.map((band) => ({ ...band })), delayed: { ...walk.delayed } };
}
