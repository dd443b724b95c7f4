import type { DeadLetterKind } from '../../core/dead-letter-kinds.js';
import type { Attempt, AttemptOutcome } from '../../core/index.js';
import { withAttempt } from '../../core/records.js';
import { checkNow } from '../../core/validate.js';
import { DELETE_STEP } from './delete-in-steps.js';
import type { BatchContext } from './executor.js';
import { PUBLISH_STEP, rowSteps } from './publish-steps.js';
import type { Arrivals, SqlQueueLinks } from './queue-links.js';
import { expiryInUse, type QueueRow } from './queue-row.js';
import {
  advanceHead,
  backPosition,
  bandHead,
  bandTail,
  frontPosition,
  retreatTail,
} from './ready-bands.js';
import type { SqlConnection, SqlDialect, SqlValue } from './sql-connection.js';

/** The columns of a live delivery, as the transitions need them. */
export interface DeliveryRow {
  id: string;
  token: number;
  delivered_at: number;
  deadline: number;
  session: string | null;
  delivery_count: number;
  history: string | null;
  priority: number;
  grp: string | null;
}

export const DELIVERY_COLUMNS =
  'id, token, delivered_at, deadline, session, delivery_count, history, priority, grp';

/** A group member that went on (R24), as its row is to be stored. */
export interface PromotedRow {
  id: string;
  state: 'ready' | 'delayed';
  ready_pos: number | null;
  ready_since: number | null;
}

interface Release {
  row: DeliveryRow;
  outcome: AttemptOutcome;
}

/** A ready or delayed job as R30 and R31 end it: no delivery to record. */
export interface IdleRow {
  id: string;
  state: 'ready' | 'delayed';
  priority: number;
  grp: string | null;
  history: string | null;
  ready_pos: number | null;
}

export const IDLE_COLUMNS = 'id, state, priority, grp, history, ready_pos';

/** A job whose expiry came (R30), with what orders the deaths: expiry time, then seq. */
interface ExpiringRow extends IdleRow {
  expiry_at: number;
  seq: number;
}

const INF = Number.POSITIVE_INFINITY;

/** When an open session ends if nothing happens (R16). */
interface SessionEnd {
  id: string;
  endsAt: number;
}

/**
 * The state changes of SPEC.md over SQL rows, inside one transaction that holds the queue
 * row. The SQL twin of the core's LeaseQueue: the model-based suite holds them together.
 */
export class JobMoves {
  constructor(
    readonly c: SqlConnection,
    readonly q: QueueRow,
    readonly dialect: SqlDialect,
    /** The transaction these operations run in. */
    readonly batch: BatchContext,
    /** Raise a `now` behind the clock instead of refusing it (see EngineOptions.clockMode). */
    readonly followClock = false,
    /** The engine's other queues, for dead-letter queues and moves (R26). */
    readonly links?: SqlQueueLinks,
  ) {
    this.before = { waiting: q.waiting, active: q.active };
  }

  /** The queue's counts when these operations began (see othersMayGoOn). */
  private readonly before: { waiting: number; active: number };

  /**
   * A lease was made to end sooner (an extend with less time than it had left): receivers
   * elsewhere sleep until the old end.
   */
  protected leaseShortened = false;

  /**
   * A delivery of a session was acked or cancelled (R28): a receive of that session (R16),
   * bounded by its own prefetch, may wait elsewhere for the room it freed.
   */
  protected sessionDeliveryAcked = false;

  /** The sessions ended in these operations, in the order they ended. */
  private readonly sessionsEnded: string[] = [];

  /**
   * The sessions ended in these operations (closed, timed out): a receive of one that waits
   * must look, to learn so (R16), though no job is ready for it.
   */
  endedSessions(): readonly string[] {
    return this.sessionsEnded;
  }

  /**
   * Whether the calls made since these operations began let receivers elsewhere go on, as a
   * publish would: a group went on (a member left waiting, R24: its head acked, cancelled or
   * moved), deliveries ended under a finite prefetch (room for more), a session's delivery was
   * acked or cancelled (room under the session's prefetch), or a lease will end sooner than it
   * would have.
   */
  othersMayGoOn(): boolean {
    const { q, before } = this;
    return (
      q.waiting < before.waiting ||
      (q.active < before.active && Number.isFinite(q.options.prefetch)) ||
      this.sessionDeliveryAcked ||
      this.leaseShortened
    );
  }

  // --- R3 -----------------------------------------------------------------------------------

  /**
   * R2: a ClockError for a `now` the queue does not accept, before anything else of a call is
   * looked at (a batch at a refused now is refused whole, R20).
   */
  checkClock(requested: number): void {
    checkNow(requested, this.followClock ? 0 : this.q.queueTime);
  }

  /**
   * Checks `now` (R2) and lets time pass: ends sessions, reclaims leases, promotes delays.
   * Returns the time the call happens at: `now`, or the clock when following it.
   */
  async advance(requested: number): Promise<number> {
    this.checkClock(requested);
    const now = Math.max(requested, this.q.queueTime);
    this.q.queueTime = now;
    if (now < this.q.nextEventAt) return now;
    const { released, open } = await this.endTimedOutSessions(now);
    const seen = new Set(released.map((release) => release.row.token));
    const expired = await this.readInSteps<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'active' AND deadline <= ?`,
      [this.q.name, now],
      ['deadline', 'id'],
    );
    for (const row of expired) {
      if (!seen.has(row.token)) released.push({ row, outcome: 'expired' });
    }
    if (released.length > 0) await this.release(released, now);
    await this.promoteDelayed(now);
    if (expiryInUse(this.q)) await this.expireDue(now);
    await this.c.run('DELETE FROM leaseq_acked WHERE queue = ? AND forget_at <= ?', [
      this.q.name,
      now,
    ]);
    const { next, forgetAt } = await this.nextTimes(open);
    // R4: a step also forgets the acked ids whose window ended, the only thing that deletes them:
    // a queue with no leases (received with ack: 'auto'), delays, expiries or sessions would
    // otherwise keep every id it remembered. Not sooner than a window from now, so that a steady
    // flow of acks brings a step once a window, not one per ack.
    const forgetting =
      forgetAt === INF ? INF : Math.max(forgetAt, now + this.q.options.dedupWindow);
    this.q.nextEventAt = Math.min(next, forgetting);
    return now;
  }

  /**
   * R3a: every session whose heartbeat or ack timeout passed ends, releasing its deliveries.
   * `open`: when each session left open ends, for the step's next event. Nothing later in the
   * step changes that: a delivery that can trip an open session's ack timeout has its deadline
   * after that, after now, so the step does not reclaim it.
   */
  private async endTimedOutSessions(
    now: number,
  ): Promise<{ released: Release[]; open: SessionEnd[] }> {
    const released: Release[] = [];
    const open: SessionEnd[] = [];
    if (this.q.sessions === 0) return { released, open };
    const ended: string[] = [];
    for (const end of await this.sessionEnds()) {
      if (end.endsAt > now) open.push(end);
      else {
        ended.push(end.id);
        // One push each: spread as arguments, a session's 200,000 deliveries overflow the stack.
        for (const release of await this.endSession(end.id, end.endsAt)) released.push(release);
      }
    }
    // Whatever call's step this is (a receive, a stats read, a refused heartbeat), the queue's
    // receivers wake as at a close: those of the sessions learn of the end by looking (R16).
    if (ended.length > 0) {
      await this.links?.sessionsTimedOut(this.q.name, {
        ids: ended,
        released: released.length > 0,
        nextEventAt: () => this.q.nextEventAt,
      });
    }
    return { released, open };
  }

  /** Deletes the session and returns its live deliveries, labelled by what ended them. */
  async endSession(sessionId: string, endedAt: number): Promise<Release[]> {
    this.sessionsEnded.push(sessionId);
    await this.c.run('DELETE FROM leaseq_sessions WHERE queue = ? AND id = ?', [
      this.q.name,
      sessionId,
    ]);
    this.q.sessions -= 1;
    // Ordered by token so that SQLite takes the session's index (leaseq_jobs_session), not
    // every job of the queue; release sorts them so anyway.
    const rows = await this.readInSteps<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'active' AND session = ?`,
      [this.q.name, sessionId],
      ['token'],
      true,
    );
    // A delivery whose own lease ran out before its session died was lost to expiry.
    return rows.map((row) => ({
      row,
      outcome: row.deadline <= endedAt ? 'expired' : 'session-ended',
    }));
  }

  /**
   * When each open session ends if nothing happens: heartbeat or ack timeout (R16). One
   * statement for all sessions, each reading one range of leaseq_jobs_session_delivered (a
   * query per session, each reading every job of the queue, made a step take seconds).
   */
  private async sessionEnds(): Promise<SessionEnd[]> {
    const sessions = await this.c.query<{
      id: string;
      timeout: number | null;
      ack_timeout: number | null;
      last_heartbeat: number;
      first_at: number | null;
    }>(
      // Only a delivery still live when its ack timeout came can trip it: the first such.
      `SELECT s.id, s.timeout, s.ack_timeout, s.last_heartbeat,
         CASE WHEN s.ack_timeout IS NULL THEN NULL ELSE (
           SELECT j.delivered_at FROM leaseq_jobs AS j
           WHERE j.queue = s.queue AND j.state = 'active' AND j.session = s.id
             AND j.delivered_at + s.ack_timeout < j.deadline
           ORDER BY j.delivered_at LIMIT 1) END AS first_at
       FROM leaseq_sessions AS s WHERE s.queue = ?`,
      [this.q.name],
    );
    const ends: SessionEnd[] = [];
    for (const session of sessions) {
      let endsAt = session.timeout === null ? INF : session.last_heartbeat + session.timeout;
      if (session.ack_timeout !== null && session.first_at !== null) {
        endsAt = Math.min(endsAt, session.first_at + session.ack_timeout);
      }
      if (endsAt !== INF) ends.push({ id: session.id, endsAt });
    }
    return ends;
  }

  /**
   * The exact next tick at which time alone changes the queue. `sessionEnds`: when the open
   * sessions end, where the caller knows (read from the storage otherwise).
   */
  async computeNextEventAt(sessionEnds?: readonly SessionEnd[]): Promise<number> {
    return (await this.nextTimes(sessionEnds)).next;
  }

  /**
   * `next`: the exact next tick at which time alone changes the queue (computeNextEventAt);
   * `forgetAt`: when the first acked id it remembers is forgotten (R4), read in the same
   * statement, or INF.
   */
  private async nextTimes(
    sessionEnds?: readonly SessionEnd[],
  ): Promise<{ next: number; forgetAt: number }> {
    const [times] = await this.c.query<{
      deadline: number | null;
      available: number | null;
      forget: number | null;
    }>(
      `SELECT (SELECT MIN(deadline) FROM leaseq_jobs WHERE queue = ? AND state = 'active') AS deadline,
              (SELECT MIN(available_at) FROM leaseq_jobs WHERE queue = ? AND state = 'delayed') AS available,
              (SELECT MIN(forget_at) FROM leaseq_acked WHERE queue = ?) AS forget`,
      [this.q.name, this.q.name, this.q.name],
    );
    let next = Math.min(times?.deadline ?? INF, times?.available ?? INF);
    if (expiryInUse(this.q)) {
      const [expiry] = await this.c.query<{ at: number | null }>(
        `SELECT MIN(expiry_at) AS at FROM leaseq_jobs
         WHERE queue = ? AND expiry_at IS NOT NULL AND state IN ('ready', 'delayed')`,
        [this.q.name],
      );
      next = Math.min(next, expiry?.at ?? INF);
    }
    if (this.q.sessions > 0) {
      for (const { endsAt } of sessionEnds ?? (await this.sessionEnds())) {
        next = Math.min(next, endsAt);
      }
    }
    return { next, forgetAt: times?.forget ?? INF };
  }

  /** R12: released deliveries return together, in token order, to the front of ready. */
  async release(released: Release[], now: number): Promise<void> {
    released.sort((a, b) => a.row.token - b.row.token);
    for (const { outcome } of released) {
      if (outcome === 'expired') this.q.counters.expiries += 1;
      else this.q.counters.sessionReleases += 1;
    }
    await this.requeue(
      released.map(({ row, outcome }) => ({ row, attempt: attemptOf(row, now, outcome) })),
      now,
      0,
    );
  }

  /** R3c: due delayed jobs join the back of their priority, in `availableAt` then seq order. */
  private async promoteDelayed(now: number): Promise<void> {
    const due = await this.readInSteps<{
      id: string;
      priority: number;
      available_at: number;
      seq: number;
    }>(
      `SELECT id, priority, available_at, seq FROM leaseq_jobs
       WHERE queue = ? AND state = 'delayed' AND available_at <= ?`,
      [this.q.name, now],
      ['available_at', 'seq'],
      true,
    );
    if (due.length === 0) return;
    const rows = mapped(due, ({ id, priority }) => ({
      id,
      ready_pos: backPosition(this.q, priority),
    }));
    await this.writeInSteps(
      rows,
      async (step) => {
        if (this.dialect.setBased) {
          // A statement a step, not a round trip per job (20,000 due together took seconds).
          await this.c.run(
            `UPDATE leaseq_jobs SET state = 'ready', ready_pos = r.ready_pos,
               ready_since = leaseq_jobs.available_at
             FROM ${this.dialect.jsonRecords(PROMOTED_COLUMNS)} AS r
             WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
            [JSON.stringify(step), this.q.name],
          );
          return;
        }
        await this.c.runEach(
          `UPDATE leaseq_jobs SET state = 'ready', ready_pos = ?, ready_since = available_at
           WHERE queue = ? AND id = ?`,
          step.map((row) => [row.ready_pos, this.q.name, row.id]),
        );
      },
      (row) => row.id.length,
    );
    this.q.delayed -= due.length;
    this.q.ready += due.length;
  }

  // --- moves of ended deliveries ------------------------------------------------------------

  /**
   * Returns ended deliveries (token order) to ready: R13 dead-letters those out of deliveries;
   * the rest go to the front in the same order, or to delayed when `delay` > 0.
   */
  async requeue(ended: EndedDelivery[], now: number, delay: number): Promise<void> {
    const back: EndedDelivery[] = [];
    const dying: DyingDelivery[] = [];
    for (const { row, attempt } of ended) {
      if (attempt !== undefined && row.delivery_count >= this.q.options.maxDeliveries) {
        dying.push({ row, attempt });
      } else {
        back.push({ row, attempt });
      }
    }
    await this.deadLetterMany(dying, now, 'max-deliveries', 'max-deliveries');
    this.q.active -= back.length;
    // Back in ready or delayed, a job may be past its expiry (R30): the next step looks.
    if (back.length > 0) this.expiryMayBeDue(now);
    if (delay > 0) {
      this.q.delayed += back.length;
      this.q.nextEventAt = Math.min(this.q.nextEventAt, now + delay);
      await this.writeInSteps(
        mapped(back, ({ row, attempt }) => requeuedRow(row, attempt, null)),
        (rows) => this.writeRequeued(rows, { state: 'delayed', at: now + delay }),
        requeuedChars,
      );
      return;
    }
    this.q.ready += back.length;
    // Front first in ready: the last goes to the front of its priority first.
    await this.writeInSteps(
      mappedBackwards(back, ({ row, attempt }) =>
        requeuedRow(row, attempt, frontPosition(this.q, row.priority)),
      ),
      (rows) => this.writeRequeued(rows, { state: 'ready', at: now }),
      requeuedChars,
    );
  }

  /**
   * Stores requeued jobs, placed as `place` says (delayed until, or ready since, `at`), each
   * row with its own place in ready, count and history: in one statement where round trips
   * cost (a statement each, 10,000 leases that ran out together took 2.3 s on PostgreSQL, the
   * queue's row locked all along), one cheap statement each elsewhere.
   */
  private async writeRequeued(
    rows: readonly RequeuedRow[],
    place: { state: 'ready' | 'delayed'; at: number },
  ): Promise<void> {
    const delayed = place.state === 'delayed';
    if (this.dialect.setBased && rows.length > 1) {
      const set = delayed
        ? `state = 'delayed', available_at = ?`
        : `state = 'ready', ready_pos = r.ready_pos, ready_since = ?`;
      await this.c.run(
        `UPDATE leaseq_jobs SET ${set}, ${CLEAR_DELIVERY},
           delivery_count = r.delivery_count, history = r.history
         FROM ${this.dialect.jsonRecords(REQUEUED_COLUMNS)} AS r
         WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
        [place.at, JSON.stringify(rows), this.q.name],
      );
      return;
    }
    const set = delayed
      ? `state = 'delayed', available_at = ?`
      : `state = 'ready', ready_pos = ?, ready_since = ?`;
    await this.c.runEach(
      `UPDATE leaseq_jobs SET ${set}, ${CLEAR_DELIVERY}, delivery_count = ?, history = ?
       WHERE queue = ? AND id = ?`,
      rows.map((row) => [
        ...(delayed ? [place.at] : [row.ready_pos, place.at]),
        row.delivery_count,
        row.history,
        this.q.name,
        row.id,
      ]),
    );
  }

  /**
   * Every row `select` finds (a SELECT whose text ends with its WHERE conditions): where a
   * statement is a round trip (PostgreSQL), in one, in the order of `key` when `sorted`. Where
   * statements run in this process (SQLite), in pages of DELETE_STEP rows in the order of `key`
   * (columns it selects, ending in a unique one, that an index its conditions range over is
   * ordered by), each page from where the one before ended, with a turn of the event loop
   * between two: one statement for the 1,000,000 leases that ran out together held the process
   * for 17 s. A page is a look-up of the index, so the pages together read each row once.
   */
  private async readInSteps<Row extends object>(
    select: string,
    params: readonly SqlValue[],
    key: readonly (keyof Row & string)[],
    sorted = false,
  ): Promise<Row[]> {
    const order = ` ORDER BY ${key.join(', ')}`;
    if (this.dialect.setBased) return this.c.query<Row>(sorted ? select + order : select, params);
    const rows: Row[] = [];
    const after = ` AND (${key.join(', ')}) > (${key.map(() => '?').join(', ')})`;
    let last: Row | undefined;
    for (;;) {
      const page = await this.c.query<Row>(
        `${last === undefined ? select : select + after}${order} LIMIT ${DELETE_STEP}`,
        last === undefined
          ? params
          : [
              ...params,
              ...key.map((column) => (last as Record<string, unknown>)[column] as SqlValue),
            ],
      );
      rows.push(...page);
      if (page.length < DELETE_STEP) return rows;
      last = page.at(-1);
      await this.batch.turn();
    }
  }

  /**
   * Writes `rows` with `write` a step at a time, within this transaction (one unit still: a
   * later step that fails rolls the earlier ones back with it): at most PUBLISH_STEP rows, or
   * PUBLISH_STEP_CHARS characters as `charsOf` counts them, a statement where a statement is a
   * round trip (PostgreSQL); DELETE_STEP rows with a turn of the event loop between two where
   * statements run in this process (SQLite, see BatchContext.turn). All of 1,000,000 leases
   * that ran out together went back in one statement of 158 MB of JSON on PostgreSQL (a
   * `RangeError: Invalid string length` once their histories were longer), and held a SQLite
   * process for 100 s.
   */
  private async writeInSteps<Row>(
    rows: Iterable<Row>,
    write: (step: Row[]) => Promise<void>,
    charsOf?: (row: Row) => number,
  ): Promise<void> {
    const setBased = this.dialect.setBased;
    let first = true;
    for (const step of rowSteps(rows, setBased ? PUBLISH_STEP : DELETE_STEP, charsOf)) {
      if (!first && !setBased) await this.batch.turn();
      first = false;
      await write(step);
    }
  }

  /**
   * R14: never silent; the job keeps its history in the dead set. R26: with a dead-letter
   * queue that takes it, it moves there instead, in this same transaction.
   */
  async deadLetter(
    row: DeliveryRow,
    attempt: Attempt,
    now: number,
    reason: string,
    kind: DeadLetterKind,
  ): Promise<void> {
    this.q.active -= 1;
    const history = appendHistory(row.history, attempt);
    if (await this.routeDead(row, history, now, reason, kind)) {
      // Moved on, the job has left its group, which goes on (R24).
      if (row.grp !== null) await this.advanceGroup(row.grp, now);
      return;
    }
    this.q.deadSeq += 1;
    this.q.dead += 1;
    await this.c.run(
      `UPDATE leaseq_jobs SET state = 'dead', dead_reason = ?, dead_at = ?, dead_seq = ?,
         ${CLEAR_DELIVERY}, history = ?
       WHERE queue = ? AND id = ?`,
      [reason, now, this.q.deadSeq, history, this.q.name, row.id],
    );
    if (row.grp !== null) await this.advanceGroup(row.grp, now);
  }

  /**
   * Ended deliveries die together, in order, each as `deadLetter` has it die (R13, R14, R26),
   * written in steps (writeInSteps) rather than a statement each: 10,000 leases of jobs out
   * of deliveries that ran out together took 13 s on PostgreSQL (26 s with a dead-letter
   * queue, three statements each), every other call waiting behind them. Those that move to
   * the dead-letter queue are looked up and written there many at once, as R31's drops are.
   */
  async deadLetterMany(
    dying: readonly DyingDelivery[],
    now: number,
    reason: string,
    kind: DeadLetterKind,
  ): Promise<void> {
    const [only] = dying;
    if (dying.length <= 1) {
      if (only !== undefined) await this.deadLetter(only.row, only.attempt, now, reason, kind);
      return;
    }
    const target = this.q.options.deadLetterQueue;
    const arrivals =
      target === undefined || this.links === undefined
        ? undefined
        : this.links.arrivals(this.q, now, { queue: this.q.name, reason, at: now });
    await this.writeInSteps(
      dying,
      async (step) => {
        if (target !== undefined) {
          await arrivals?.lookUp(
            step.map(({ row }) => ({ id: row.id, target, priority: row.priority, grp: row.grp })),
          );
        }
        /** Those that stay dead here, and those that move on with their history. */
        const dead: DeadDeliveryRow[] = [];
        const moved: HistoryRow[] = [];
        for (const { row, attempt } of step) {
          this.q.active -= 1;
          const history = appendHistory(row.history, attempt);
          if (await this.routeDead(row, history, now, reason, kind, arrivals)) {
            moved.push({ id: row.id, history });
          } else {
            this.q.deadSeq += 1;
            this.q.dead += 1;
            dead.push({ id: row.id, dead_seq: this.q.deadSeq, history });
          }
          // Dead or moved on, the job has left its group, which goes on (R24).
          if (row.grp !== null) await this.advanceGroup(row.grp, now);
        }
        // The arrivals keep the history as stored: the attempt that ended goes in first.
        await this.writeHistories(moved);
        await arrivals?.write();
        await this.writeDeadDeliveries(dead, now, reason);
      },
      (item) => item.row.id.length + (item.row.history?.length ?? 0),
    );
  }

  /** Stores the history of each of `rows`: in one statement where round trips cost. */
  private async writeHistories(rows: readonly HistoryRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect.setBased && rows.length > 1) {
      await this.c.run(
        `UPDATE leaseq_jobs SET history = r.history
         FROM ${this.dialect.jsonRecords(HISTORY_COLUMNS)} AS r
         WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
        [JSON.stringify(rows), this.q.name],
      );
      return;
    }
    await this.c.runEach(
      'UPDATE leaseq_jobs SET history = ? WHERE queue = ? AND id = ?',
      rows.map((row) => [row.history, this.q.name, row.id]),
    );
  }

  /** Stores deliveries that died in their own queue's dead set (see deadLetterMany). */
  private async writeDeadDeliveries(
    rows: readonly DeadDeliveryRow[],
    now: number,
    reason: string,
  ): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect.setBased && rows.length > 1) {
      await this.c.run(
        `UPDATE leaseq_jobs SET state = 'dead', dead_reason = ?, dead_at = ?, dead_seq = r.dead_seq,
           ${CLEAR_DELIVERY}, history = r.history
         FROM ${this.dialect.jsonRecords(DEAD_DELIVERY_COLUMNS)} AS r
         WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
        [reason, now, JSON.stringify(rows), this.q.name],
      );
      return;
    }
    await this.c.runEach(
      `UPDATE leaseq_jobs SET state = 'dead', dead_reason = ?, dead_at = ?, dead_seq = ?,
         ${CLEAR_DELIVERY}, history = ?
       WHERE queue = ? AND id = ?`,
      rows.map((row) => [reason, now, row.dead_seq, row.history, this.q.name, row.id]),
    );
  }

  /**
   * A ready or delayed job dies (R30 expired, R31 maxlen): R14, R26 as for a delivery's death,
   * with no attempt to record. The caller has taken it out of ready's or delayed's count (and
   * closes the gap it leaves in ready). Answers the next member of its group made ready or
   * delayed, if any. With `deferred`, a job that dies here is added to it for `storeIdleDeaths`
   * rather than written at once; with `arrivals` (its dead-letter queue's, the job looked up
   * there), one that moves there is judged and written by them.
   */
  async dieIdle(
    row: IdleRow,
    now: number,
    reason: 'expired' | 'maxlen',
    deferred?: IdleDeath[],
    arrivals?: Arrivals,
  ): Promise<string | undefined> {
    if (!(await this.routeDead(row, row.history, now, reason, reason, arrivals))) {
      this.q.deadSeq += 1;
      this.q.dead += 1;
      const death = { id: row.id, dead_seq: this.q.deadSeq };
      if (deferred === undefined) await this.storeIdleDeaths([death], now, reason);
      else deferred.push(death);
    }
    // Dead or moved on, the job has left its group, which goes on (R24).
    return row.grp === null ? undefined : this.advanceGroup(row.grp, now);
  }

  /** Writes deaths of `dieIdle`: in one statement where round trips cost, else one each. */
  async storeIdleDeaths(
    deaths: readonly IdleDeath[],
    now: number,
    reason: 'expired' | 'maxlen',
  ): Promise<void> {
    await this.writeInSteps(
      deaths,
      async (step) => {
        if (this.dialect.setBased && step.length > 1) {
          await this.c.run(
            `UPDATE leaseq_jobs SET state = 'dead', dead_reason = ?, dead_at = ?,
               dead_seq = r.dead_seq, ready_pos = NULL
             FROM ${this.dialect.jsonRecords(IDLE_DEATH_COLUMNS)} AS r
             WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
            [reason, now, JSON.stringify(step), this.q.name],
          );
          return;
        }
        await this.c.runEach(
          `UPDATE leaseq_jobs SET state = 'dead', dead_reason = ?, dead_at = ?, dead_seq = ?,
             ready_pos = NULL
           WHERE queue = ? AND id = ?`,
          step.map((death) => [reason, now, death.dead_seq, this.q.name, death.id]),
        );
      },
      (death) => death.id.length,
    );
  }

  /**
   * Counts a death by kind (R17) and, with a dead-letter queue that takes the job, moves it
   * there (R26): true. False when it stays to die here.
   */
  private async routeDead(
    row: { id: string; priority: number; grp: string | null },
    history: string | null,
    now: number,
    reason: string,
    kind: DeadLetterKind,
    arrivals?: Arrivals,
  ): Promise<boolean> {
    const counts = this.q.counters.deadLetters;
    counts[kind] = (counts[kind] ?? 0) + 1;
    const target = this.q.options.deadLetterQueue;
    if (target === undefined || this.links === undefined) return false;
    if (arrivals !== undefined) {
      return arrivals.take({ id: row.id, target, priority: row.priority, grp: row.grp });
    }
    const origin = { queue: this.q.name, reason, at: now };
    const transfer = { id: row.id, history, origin, priority: row.priority, grp: row.grp };
    return this.links.admit(this.q, target, now, transfer);
  }

  // --- R30: expiry --------------------------------------------------------------------------

  /**
   * R3d, R30: every ready or delayed job whose expiry came dies with reason `expired`, in
   * expiry order, then publish order (seq); the next member of a group may follow in the same
   * step, in its place in that order.
   *
   * Written in steps of this one transaction, as writeInSteps writes (with a turn of the event
   * loop between two where statements run in this process: 100,000 jobs expiring together held
   * a SQLite process for 3–7 s). Those that move to the dead-letter queue (R26) are looked up
   * and written there many at once, as R31's drops are: three statements each made 10,000
   * expiring together take 31 s on PostgreSQL.
   */
  private async expireDue(now: number): Promise<void> {
    const due = await this.dueExpiries(now, undefined);
    if (due.length === 0) return;
    due.sort(byExpiry);
    const target = this.q.options.deadLetterQueue;
    const arrivals =
      target === undefined || this.links === undefined
        ? undefined
        : this.links.arrivals(this.q, now, { queue: this.q.name, reason: 'expired', at: now });
    const mover = (job: ExpiringRow) => ({
      id: job.id,
      target: target as string,
      priority: job.priority,
      grp: job.grp,
    });
    const step = this.dialect.setBased ? PUBLISH_STEP : DELETE_STEP;
    /** Ready positions left free, by priority. */
    const gaps = new Map<number, number[]>();
    /**
     * Jobs that die here, written at the end of each step (a statement each made 20,000 due
     * together take seconds): nothing the loop reads looks at their rows again.
     */
    const deaths: IdleDeath[] = [];
    const writeStep = async () => {
      await arrivals?.write();
      await this.storeIdleDeaths(deaths.splice(0), now, 'expired');
    };
    // By index, not shift(): shifting an array of 200,000 took most of a minute.
    for (let index = 0; index < due.length; index += 1) {
      if (index > 0 && index % step === 0) {
        await writeStep();
        if (!this.dialect.setBased) await this.batch.turn();
      }
      const job = due[index] as (typeof due)[number];
      if (arrivals !== undefined && !arrivals.knows(mover(job))) {
        // This job and those after it in the step (those known already are not looked again).
        await arrivals.lookUp(due.slice(index, index + step).map(mover));
      }
      if (job.state === 'ready') {
        this.q.ready -= 1;
        const band = gaps.get(job.priority) ?? [];
        band.push(job.ready_pos as number);
        gaps.set(job.priority, band);
      } else {
        this.q.delayed -= 1;
      }
      this.q.counters.expired += 1;
      const promoted = await this.dieIdle(job, now, 'expired', deaths, arrivals);
      if (promoted === undefined) continue;
      // Among the jobs still to come, in expiry order.
      for (const next of await this.dueExpiries(now, promoted)) {
        let at = index + 1;
        while (at < due.length && byExpiry(next, due[at] as (typeof due)[number]) >= 0) at += 1;
        due.splice(at, 0, next);
      }
    }
    await writeStep();
    for (const [priority, positions] of gaps) await this.closeReadyGaps(priority, positions);
  }

  /** The ready and delayed jobs whose expiry is at or before `now` (or that one job). */
  private dueExpiries(now: number, id: string | undefined): Promise<ExpiringRow[]> {
    if (id === undefined) {
      return this.readInSteps<ExpiringRow>(
        `SELECT ${IDLE_COLUMNS}, expiry_at, seq FROM leaseq_jobs
         WHERE queue = ? AND expiry_at <= ? AND state IN ('ready', 'delayed')`,
        [this.q.name, now],
        ['expiry_at', 'id'],
      );
    }
    return this.c.query<ExpiringRow>(
      `SELECT ${IDLE_COLUMNS}, expiry_at, seq FROM leaseq_jobs
       WHERE queue = ? AND expiry_at <= ? AND state IN ('ready', 'delayed')${id === undefined ? '' : ' AND id = ?'}`,
      id === undefined ? [this.q.name, now] : [this.q.name, now, id],
    );
  }

  /**
   * Closes the gaps that jobs leaving ready left at `positions` of priority `priority`'s band,
   * keeping the order of the others. A gap at or before `frontThrough` is closed by moving the
   * jobs before it back one place, and the head follows: gaps at the front (the jobs published
   * first expire first, a move takes the front) move nothing. A gap after it is closed by moving
   * the jobs after it forward, and the tail follows. Either way the jobs between the last gap
   * closed from the front and the first closed from the back stay where they are, so a call
   * that walks the band in steps (moveJobs) keeps its place; one statement for each side, over
   * that range of the ready index alone (one per gap made expiring every other job of a long
   * queue quadratic, and one over the whole band read all of it).
   */
  async closeReadyGaps(
    priority: number,
    positions: number[],
    frontThrough = Number.POSITIVE_INFINITY,
  ): Promise<void> {
    if (positions.length === 0) return;
    positions.sort((a, b) => a - b);
    const { front, back } = gapSides(this.q, priority, positions, frontThrough);
    if (front.count > 0) {
      if (front.moves > 0)
        await this.renumberRange(front.from, front.through, front.from + front.count);
      advanceHead(this.q, priority, front.count);
    }
    if (back.count > 0) {
      if (back.moves > 0) await this.renumberRange(back.from, back.through, back.from);
      retreatTail(this.q, priority, back.count);
    }
  }

  /**
   * How many ready jobs `closeReadyGaps` would move to close these gaps (sorted): a call that
   * closes them at each of its steps can tell when that would cost more than the step.
   */
  gapClosingMoves(priority: number, positions: readonly number[], frontThrough: number): number {
    const { front, back } = gapSides(this.q, priority, positions, frontThrough);
    return front.moves + back.moves;
  }

  /**
   * Closes the one gap a job leaving ready at `position` left in priority `priority`'s band
   * (R28): the jobs on its shorter side move one place toward it, by statements over that
   * range of the ready index alone (see shiftToward). Renumbering the band read all of it and
   * wrote every job behind the gap: a cancel near the front of 200,000 ready jobs took about a
   * second.
   */
  async closeReadyGap(priority: number, position: number): Promise<void> {
    const head = bandHead(this.q, priority);
    const tail = bandTail(this.q, priority);
    // Bands are disjoint ranges of ready_pos: a range within this one names its jobs alone.
    if (position - head <= tail - position) {
      if (position > head) await this.shiftToward(position, head, 1);
      advanceHead(this.q, priority, 1);
    } else {
      if (position < tail) await this.shiftToward(position, tail, -1);
      retreatTail(this.q, priority);
    }
  }

  /**
   * Moves the ready jobs from the gap at `gap` to `end` (exclusive of the gap, one band's) one
   * place toward it (`by`: +1 from below, -1 from above). One statement where round trips cost;
   * where statements run in this process (SQLite), DELETE_STEP positions at a time from the gap
   * outward, with a turn of the event loop between two (see BatchContext.turn): each step moves
   * jobs the one before did not reach, so none moves twice. In one statement, the cancels of 200
   * jobs in the middle of 100,000 ready ones, sent together, held the process for 98 s.
   */
  private async shiftToward(gap: number, end: number, by: 1 | -1): Promise<void> {
    const shift = (from: number, through: number) =>
      this.c.run(
        `UPDATE leaseq_jobs SET ready_pos = ready_pos ${by === 1 ? '+' : '-'} 1
         WHERE queue = ? AND id IN (SELECT id FROM leaseq_jobs
           WHERE queue = ? AND state = 'ready' AND ready_pos >= ? AND ready_pos <= ?)`,
        [this.q.name, this.q.name, from, through],
      );
    if (this.dialect.setBased) {
      await shift(Math.min(gap - by, end), Math.max(gap - by, end));
      return;
    }
    /** The position of the step's job nearest the gap; its farthest is `far`. */
    let near = gap - by;
    for (let first = true; by === 1 ? near >= end : near <= end; first = false) {
      if (!first) await this.batch.turn();
      const far =
        by === 1 ? Math.max(end, near - DELETE_STEP + 1) : Math.min(end, near + DELETE_STEP - 1);
      await shift(Math.min(near, far), Math.max(near, far));
      near = far - by;
    }
  }

  /**
   * Gives the ready jobs at positions `from` to `through` (within one band) the positions
   * `start`, `start + 1`, … in their order, in one statement; rows already in place are not
   * written.
   */
  private async renumberRange(from: number, through: number, start: number): Promise<void> {
    await this.c.run(
      `UPDATE leaseq_jobs SET ready_pos = ranked.pos
       FROM (SELECT id, CAST(? AS BIGINT) - 1 + row_number() OVER (ORDER BY ready_pos) AS pos
             FROM leaseq_jobs WHERE queue = ? AND state = 'ready' AND ready_pos >= ? AND ready_pos <= ?) AS ranked
       WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = ranked.id
         AND leaseq_jobs.ready_pos <> ranked.pos`,
      [start, this.q.name, from, through, this.q.name],
    );
  }

  /**
   * R30: a job of this queue became ready or delayed again (requeued, next in its group,
   * redriven): its expiry may be due at once, so the next step looks (a lower bound of R3's
   * next event; the step computes the exact one).
   */
  expiryMayBeDue(now: number): void {
    if (expiryInUse(this.q)) this.q.nextEventAt = Math.min(this.q.nextEventAt, now);
  }

  /**
   * R24: the member of group `grp` in play left it (acked, auto-acked, dead): the next one in
   * group order goes to the back of ready (of its priority), or to delayed while its delay
   * lasts. Answers its id, if there is one.
   */
  async advanceGroup(grp: string, now: number): Promise<string | undefined> {
    const [next] = await this.c.query<{ id: string; priority: number; available_at: number }>(
      `SELECT id, priority, available_at FROM leaseq_jobs
       WHERE queue = ? AND grp = ? AND state = 'waiting' ORDER BY group_seq LIMIT 1`,
      [this.q.name, grp],
    );
    if (next === undefined) return undefined;
    const row = this.goesOn(next, now);
    if (row.state === 'delayed') {
      await this.c.run(`UPDATE leaseq_jobs SET state = 'delayed' WHERE queue = ? AND id = ?`, [
        this.q.name,
        next.id,
      ]);
      return next.id;
    }
    await this.c.run(
      `UPDATE leaseq_jobs SET state = 'ready', ready_pos = ?, ready_since = ?
       WHERE queue = ? AND id = ?`,
      [row.ready_pos, row.ready_since, this.q.name, next.id],
    );
    return next.id;
  }

  /**
   * R24: waiting member `next` goes on, counted here: to delayed while its delay lasts, else to
   * the back of ready (of its priority). Answers its row as it is to be stored.
   */
  protected goesOn(
    next: { id: string; priority: number; available_at: number },
    now: number,
  ): PromotedRow {
    this.q.waiting -= 1;
    this.expiryMayBeDue(now);
    if (next.available_at > now) {
      this.q.delayed += 1;
      this.q.nextEventAt = Math.min(this.q.nextEventAt, next.available_at);
      return { id: next.id, state: 'delayed', ready_pos: null, ready_since: null };
    }
    this.q.ready += 1;
    return {
      id: next.id,
      state: 'ready',
      ready_pos: backPosition(this.q, next.priority),
      ready_since: now,
    };
  }

  /** R24: whether group `grp` has a member that is not dead (a newcomer then waits). */
  async groupHasMembers(grp: string): Promise<boolean> {
    const [row] = await this.c.query<{ one: number }>(
      `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND grp = ? AND state <> 'dead' LIMIT 1`,
      [this.q.name, grp],
    );
    return row !== undefined;
  }

  async liveDelivery(token: number): Promise<DeliveryRow | undefined> {
    const [row] = await this.c.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND token = ?`,
      [this.q.name, token],
    );
    return row;
  }
}

/** A ready or delayed job that dies in its own queue (R30, R31), with its place in the dead set. */
export interface IdleDeath {
  id: string;
  dead_seq: number;
}

const IDLE_DEATH_COLUMNS = [
  ['id', 'text'],
  ['dead_seq', 'integer'],
] as const;

const PROMOTED_COLUMNS = [
  ['id', 'text'],
  ['ready_pos', 'integer'],
] as const;

/** One side of the gaps `closeReadyGaps` closes: the range it renumbers and how many gaps. */
interface GapSide {
  from: number;
  through: number;
  /** Gaps on this side. */
  count: number;
  /** Ready jobs that change place. */
  moves: number;
}

/** The gaps (sorted) at or before `frontThrough`, closed from the head, and those after it. */
function gapSides(
  q: QueueRow,
  priority: number,
  positions: readonly number[],
  frontThrough: number,
): { front: GapSide; back: GapSide } {
  let split = positions.findIndex((position) => position > frontThrough);
  if (split === -1) split = positions.length;
  const head = bandHead(q, priority);
  const tail = bandTail(q, priority);
  const last = positions[split - 1];
  const first = positions[split];
  const front =
    last === undefined
      ? { from: head, through: head - 1, count: 0, moves: 0 }
      : { from: head, through: last, count: split, moves: last - head + 1 - split };
  const back =
    first === undefined
      ? { from: tail + 1, through: tail, count: 0, moves: 0 }
      : {
          from: first,
          through: tail,
          count: positions.length - split,
          moves: tail - first + 1 - (positions.length - split),
        };
  return { front, back };
}

/** Expiry order (R30): by time, then publish order; negative when `a` comes first. */
function byExpiry(a: ExpiringRow, b: ExpiringRow): number {
  return a.expiry_at - b.expiry_at || a.seq - b.seq;
}

const CLEAR_DELIVERY = 'token = NULL, delivered_at = NULL, deadline = NULL, session = NULL';

export function attemptOf(
  row: DeliveryRow,
  now: number,
  outcome: AttemptOutcome,
  reason?: string,
  error?: string,
): Attempt {
  return {
    token: row.token,
    deliveredAt: row.delivered_at,
    endedAt: now,
    outcome,
    ...(reason === undefined ? {} : { reason }),
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * A delivery that ended, with the attempt to record; none for one given back unworked (R33),
 * whose row then carries the job's deliveryCount as it was before it.
 */
export interface EndedDelivery {
  row: DeliveryRow;
  attempt: Attempt | undefined;
}

/** A requeued job as `writeRequeued` stores it: its place in ready (null: delayed). */
interface RequeuedRow {
  id: string;
  ready_pos: number | null;
  delivery_count: number;
  history: string | null;
}

const REQUEUED_COLUMNS = [
  ['id', 'text'],
  ['ready_pos', 'integer'],
  ['delivery_count', 'integer'],
  ['history', 'text'],
] as const;

/** Characters of text a requeued row's statement carries (see writeInSteps). */
function requeuedChars(row: RequeuedRow): number {
  return row.id.length + (row.history?.length ?? 0);
}

/** A delivery that dies as it ends, with the attempt to record (see deadLetterMany). */
export interface DyingDelivery {
  row: DeliveryRow;
  attempt: Attempt;
}

/** A delivery that died in its own queue, as `writeDeadDeliveries` stores it. */
interface DeadDeliveryRow {
  id: string;
  dead_seq: number;
  history: string;
}

const DEAD_DELIVERY_COLUMNS = [
  ['id', 'text'],
  ['dead_seq', 'integer'],
  ['history', 'text'],
] as const;

/** A job's history as `writeHistories` stores it. */
interface HistoryRow {
  id: string;
  history: string;
}

const HISTORY_COLUMNS = [
  ['id', 'text'],
  ['history', 'text'],
] as const;

/** `items` mapped by `map` lazily, in order: each as it is taken. */
function* mapped<T, R>(items: readonly T[], map: (item: T) => R): Generator<R> {
  for (const item of items) yield map(item);
}

/** `items` mapped by `map` lazily, last first. */
function* mappedBackwards<T, R>(items: readonly T[], map: (item: T) => R): Generator<R> {
  for (let index = items.length - 1; index >= 0; index--) yield map(items[index] as T);
}

function requeuedRow(
  row: DeliveryRow,
  attempt: Attempt | undefined,
  readyPos: number | null,
): RequeuedRow {
  const [deliveryCount, history] = countAndHistory(row, attempt);
  return { id: row.id, ready_pos: readyPos, delivery_count: deliveryCount, history };
}

/** The delivery_count and history a requeued job is stored with. */
function countAndHistory(row: DeliveryRow, attempt: Attempt | undefined): [number, string | null] {
  return [
    row.delivery_count,
    attempt === undefined ? row.history : appendHistory(row.history, attempt),
  ];
}

export function appendHistory(history: string | null, attempt: Attempt): string {
  const attempts = history === null ? [] : (JSON.parse(history) as Attempt[]);
  return JSON.stringify(withAttempt(attempts, attempt));
}
