import { nackKind } from '../../core/dead-letter-kinds.js';
import {
  type AckMode,
  DEAD_LETTER_PAGE_CHARS,
  type DeadLetter,
  type DeadLetterOrigin,
  type DeadLetterPage,
  type Delivery,
  type DeliveryPage,
  deadLetterCursor,
  decodePayload,
  deliveryCursor,
  type InspectView,
  type JobState,
  type JobView,
  type LiveDelivery,
  type MoveJobsOperation,
  type NackDisposition,
  type PublishResult,
  type PurgeQueueResult,
  QueueFullError,
  type QueueStats,
  SessionClosedError,
} from '../../core/index.js';
import { generatedId, hasGeneratedForm } from '../../core/text.js';
import { checkSessionKnown, sessionIdOf } from '../../core/validate.js';
import {
  BULK_STEP,
  MOVABLE_COLUMNS,
  MOVE_CHUNK,
  type MovableRow,
  MoveRun,
  STEP_RENUMBER_BOUND,
} from './bulk-steps.js';
import { DELETE_STEP, deleteInSteps } from './delete-in-steps.js';
import {
  appendHistory,
  attemptOf,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  IDLE_COLUMNS,
  type IdleDeath,
  type IdleRow,
  JobMoves,
  type PromotedRow,
} from './job-moves.js';
import { NewRowSteps, PUBLISH_STEP } from './publish-steps.js';
import type { Mover } from './queue-links.js';
import { INFINITY_AS_NULL } from './queue-row.js';
import {
  advanceHead,
  backPosition,
  bandTail,
  emptyBands,
  hasRankedReady,
  lowestReadyBand,
  readyRanges,
} from './ready-bands.js';
import type { SqlConnection, SqlDialect } from './sql-connection.js';
import { statsOfRow } from './stats-read.js';

export { MOVE_CHUNK } from './bulk-steps.js';

/** A publish whose arguments were checked and whose payload is already JSON text. */
export interface EncodedPublish {
  id: string | undefined;
  payloadJson: string | null;
  delay: number;
  priority: number;
  group: string | undefined;
  expiresAt: number | undefined;
}

/** What a new session is opened with; Infinity means no bound. */
export interface SessionLimits {
  prefetch: number;
  timeout: number;
  ackTimeout: number;
}

export interface ReserveArgs {
  max: number;
  visibility: number | undefined;
  session: string | undefined;
  ack: AckMode;
}

/** The delivery of a job just reserved (its row as the reserving statement returned it). */
export function deliveryOf(
  row: {
    id: string;
    payload: string | null;
    delivery_count: number;
    token: number;
    grp: string | null;
  },
  deadline: number,
): Delivery {
  return {
    token: row.token,
    id: row.id,
    payload: decodePayload(row.payload),
    deadline,
    deliveryCount: row.delivery_count,
    redelivered: row.delivery_count > 1,
    ...(row.grp === null ? {} : { group: row.grp }),
  };
}

/** The operations of SPEC.md over SQL rows; arguments are validated by the caller. */
export class QueueOps extends JobMoves {
  /** Publishes in order (R4); new jobs are written in steps of one transaction (R5, NewRowSteps). */
  async publish(now: number, inputs: readonly EncodedPublish[]): Promise<PublishResult[]> {
    now = await this.advance(now);
    const maxLength = this.q.options.maxLength;
    const readyBefore = this.q.ready;
    if (maxLength !== undefined && this.q.options.overflow === undefined) {
      await this.refuseBeyond(maxLength, now, inputs);
    }
    const ids = new IdAllocator(this, now);
    await ids.check(
      inputs.flatMap((input) => (input.id === undefined ? [] : [input.id])),
      inputs,
    );
    const results: PublishResult[] = [];
    const rows = new NewRowSteps<NewJobRow>(this.dialect.setBased ? PUBLISH_STEP : DELETE_STEP);
    /** Groups known to have a member (R24): a newcomer to one waits. */
    const occupied = new Map<string, boolean>();
    for (const input of inputs) {
      const id = input.id ?? ids.next() ?? (await ids.generate());
      if (ids.taken.has(id)) {
        this.q.counters.duplicates += 1;
        // R29: the answer names the group sequence number of the job that is there (or was).
        const groupSeq = ids.taken.get(id) ?? null;
        results.push({ id, duplicate: true, ...(groupSeq === null ? {} : { groupSeq }) });
        continue;
      }
      let waits = false;
      if (input.group !== undefined) {
        waits = occupied.get(input.group) ?? (await this.groupHasMembers(input.group));
        occupied.set(input.group, true);
      }
      const row = this.newJobRow(now, id, input, waits);
      ids.taken.set(id, row.group_seq);
      results.push({
        id,
        duplicate: false,
        ...(row.group_seq === null ? {} : { groupSeq: row.group_seq }),
      });
      if (rows.add(row)) await this.writeStep(rows);
    }
    await this.writeStep(rows);
    if (maxLength !== undefined && this.q.ready > readyBefore) await this.makeRoom(maxLength, now);
    return results;
  }

  /**
   * Writes the new rows `steps` holds, as one step of the publish, within its transaction (R5:
   * a later step that fails rolls the earlier ones back with it). Where statements run in this
   * process (SQLite), the event loop turns between two steps (see BatchContext.turn).
   */
  private async writeStep(steps: NewRowSteps<NewJobRow>): Promise<void> {
    const rows = steps.take();
    if (rows.length === 0) return;
    if (steps.taken > 1 && !this.dialect.setBased) await this.batch.turn();
    if (rows.some((row) => row.expiry_at !== null)) {
      await this.insertExpiringRows(rows);
      // Back in ready or delayed later (requeued, next in its group), a job may be expired.
      if (rows.some((row) => row.expires_at !== null)) this.q.jobExpiry = true;
    } else {
      await this.insertRows(rows);
    }
  }

  /**
   * R31, overflow `reject`: refuses the whole publish (R5) before anything of it is stored when
   * it would leave more ready jobs than `maxLength`. Duplicates (R4), delayed jobs and jobs that
   * would wait behind an earlier member of their group (R24) add none.
   */
  private async refuseBeyond(
    maxLength: number,
    now: number,
    inputs: readonly EncodedPublish[],
  ): Promise<void> {
    const explicit = inputs.flatMap((input) => (input.id === undefined ? [] : [input.id]));
    const seen = new Set((await this.takenAmong(explicit, now)).map((taken) => taken.id));
    const groups = new Map<string, boolean>();
    let added = 0;
    for (const input of inputs) {
      if (input.id !== undefined) {
        if (seen.has(input.id)) continue;
        seen.add(input.id);
      }
      if (input.group !== undefined) {
        const waits = groups.get(input.group) ?? (await this.groupHasMembers(input.group));
        groups.set(input.group, true);
        if (waits) continue;
      }
      if (input.delay === 0) added += 1;
    }
    if (added > 0 && this.q.ready + added > maxLength) {
      // Kept: a LeaseqError leaves the batch to commit, the queue row with it.
      this.q.counters.refused += inputs.length;
      throw new QueueFullError(
        `queue ${this.q.name} is full: ${this.q.ready} ready jobs, maxLength ${maxLength}; the publish would add ${added}`,
      );
    }
  }

  /**
   * R31, overflow `dead-letter-oldest`: once the publish is in, the oldest ready job (the front
   * of the lowest priority that has one) dies with reason `maxlen` while ready holds more than
   * `maxLength`. It stands at its band's head, so no ready position moves.
   *
   * In steps of the publish's one transaction (R5), as its new jobs are written: at most
   * PUBLISH_STEP jobs a statement where a statement is a round trip (PostgreSQL), DELETE_STEP
   * with a turn of the event loop between two where statements run in this process (SQLite).
   * A queue 100,000 jobs above a lowered maxLength was read and written in one piece: on
   * SQLite the process held for 1–3 s, on PostgreSQL one statement of 3.5 MB of ids.
   */
  private async makeRoom(maxLength: number, now: number): Promise<void> {
    // R26: those that move to the dead-letter queue are looked up and written there many at
    // once too, as moveJobs' are (a few statements each made 20,000 take seconds on PostgreSQL).
    const target = this.q.options.deadLetterQueue;
    const arrivals =
      target === undefined || this.links === undefined
        ? undefined
        : this.links.arrivals(this.q, now, { queue: this.q.name, reason: 'maxlen', at: now });
    const step = this.dialect.setBased ? PUBLISH_STEP : DELETE_STEP;
    /** Jobs read in the step under way. */
    let inStep = 0;
    while (this.q.ready > maxLength) {
      if (inStep >= step) {
        if (!this.dialect.setBased) await this.batch.turn();
        inStep = 0;
      }
      const band = lowestReadyBand(this.q) as { priority: number; head: number };
      // The band's front jobs that must die, read by one range of the ready index and written
      // by one statement: a look-up each made a publish dropping 20,000 jobs take minutes (SQLite
      // read all of the queue's rows for each).
      const count = Math.min(
        this.q.ready - maxLength,
        bandTail(this.q, band.priority) - band.head + 1,
        step - inStep,
      );
      const oldest = await this.c.query<IdleRow>(
        `SELECT ${IDLE_COLUMNS} FROM leaseq_jobs
         WHERE queue = ? AND state = 'ready' AND ready_pos >= ? AND ready_pos < ?
         ORDER BY ready_pos`,
        [this.q.name, band.head, band.head + count],
      );
      if (oldest.length === 0) {
        throw new Error(`queue ${this.q.name} has no ready job at position ${band.head}`);
      }
      inStep += oldest.length;
      if (target !== undefined) {
        await arrivals?.lookUp(
          oldest.map((row) => ({ id: row.id, target, priority: row.priority, grp: row.grp })),
        );
      }
      const deaths: IdleDeath[] = [];
      for (const row of oldest) {
        advanceHead(this.q, band.priority, 1);
        this.q.ready -= 1;
        // A group's next member gone on may now be the oldest (a lower band): look again.
        if ((await this.dieIdle(row, now, 'maxlen', deaths, arrivals)) !== undefined) break;
      }
      await arrivals?.write();
      await this.storeIdleDeaths(deaths, now, 'maxlen');
    }
  }

  /** One statement for all rows where round trips cost; one cheap statement each elsewhere. */
  private async insertRows(rows: readonly NewJobRow[]): Promise<void> {
    if (this.dialect.setBased) {
      await this.c.run(
        `INSERT INTO leaseq_jobs (queue, id, payload, seq, state, delivery_count, available_at,
           ready_pos, ready_since, published_at, priority, grp, group_seq)
         SELECT ?, id, payload, seq, state, 0, available_at, ready_pos, ready_since, published_at,
           priority, grp, group_seq
         FROM ${this.dialect.jsonRecords(NEW_JOB_COLUMNS)} AS new_jobs`,
        [this.q.name, JSON.stringify(rows)],
      );
      return;
    }
    await this.c.runEach(
      `INSERT INTO leaseq_jobs (queue, id, payload, seq, state, delivery_count, available_at,
         ready_pos, ready_since, published_at, priority, grp, group_seq)
       VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
      rows.map((row) => [
        this.q.name,
        row.id,
        row.payload,
        row.seq,
        row.state,
        row.available_at,
        row.ready_pos,
        row.ready_since,
        row.published_at,
        row.priority,
        row.grp,
        row.group_seq,
      ]),
    );
  }

  /**
   * `insertRows` with the expiry columns (R30): a queue with a retention, or a publish of jobs
   * with an expiresAt. Apart from `insertRows`, so that the statements of other publishes stay
   * as they were.
   */
  private async insertExpiringRows(rows: readonly NewJobRow[]): Promise<void> {
    const columns = [...NEW_JOB_COLUMNS, ...EXPIRY_COLUMNS];
    const names = columns.map(([name]) => name).join(', ');
    if (this.dialect.setBased) {
      await this.c.run(
        `INSERT INTO leaseq_jobs (queue, delivery_count, ${names})
         SELECT ?, 0, ${names} FROM ${this.dialect.jsonRecords(columns)} AS new_jobs`,
        [this.q.name, JSON.stringify(rows)],
      );
      return;
    }
    const marks = columns.map(() => '?').join(', ');
    await this.c.runEach(
      `INSERT INTO leaseq_jobs (queue, delivery_count, ${names}) VALUES (?, 0, ${marks})`,
      rows.map((row) => [this.q.name, ...columns.map(([name]) => row[name])]),
    );
  }

  private newJobRow(now: number, id: string, input: EncodedPublish, waits: boolean): NewJobRow {
    const row = this.newJobState(now, id, input, waits);
    const retention = this.q.options.retention;
    if (retention !== undefined || input.expiresAt !== undefined) {
      // R30: the expiry in force, the earlier of its own and the queue's retention.
      row.expires_at = input.expiresAt ?? null;
      row.expiry_at = Math.min(
        input.expiresAt ?? Number.POSITIVE_INFINITY,
        retention === undefined ? Number.POSITIVE_INFINITY : now + retention,
      );
      if (!waits) this.q.nextEventAt = Math.min(this.q.nextEventAt, row.expiry_at);
    }
    return row;
  }

  private newJobState(now: number, id: string, input: EncodedPublish, waits: boolean): NewJobRow {
    const seq = this.q.nextSeq++;
    this.q.counters.published += 1;
    const grp = input.group ?? null;
    let state: NewJobRow['state'] = 'ready';
    if (waits) {
      state = 'waiting';
      this.q.waiting += 1;
    } else if (input.delay > 0) {
      state = 'delayed';
      this.q.delayed += 1;
      this.q.nextEventAt = Math.min(this.q.nextEventAt, now + input.delay);
    } else {
      this.q.ready += 1;
    }
    const ready = state === 'ready';
    return {
      id,
      payload: input.payloadJson,
      seq,
      state,
      available_at: now + input.delay,
      ready_pos: ready ? backPosition(this.q, input.priority) : null,
      ready_since: ready ? now : null,
      published_at: now,
      priority: input.priority,
      grp,
      group_seq: grp === null ? null : seq,
      expires_at: null,
      expiry_at: null,
    };
  }

  /**
   * Which of `ids` are present (any state) or remembered as acked (R4), each with its group
   * sequence number (R29; null without a group).
   */
  async takenAmong(ids: readonly string[], now: number): Promise<TakenId[]> {
    if (ids.length === 0) return [];
    if (!this.dialect.setBased) {
      const taken: TakenId[] = [];
      for (const [index, id] of ids.entries()) {
        // One look-up each, in this process: the event loop turns between steps of them (see
        // BatchContext.turn), as between the steps that write (1,000,000 held it for 4.7 s).
        if (index > 0 && index % DELETE_STEP === 0) await this.batch.turn();
        const [row] = await this.c.query<{ group_seq: number | null }>(
          `SELECT group_seq FROM leaseq_jobs WHERE queue = ? AND id = ?
           UNION ALL SELECT group_seq FROM leaseq_acked WHERE queue = ? AND id = ? AND forget_at > ?`,
          [this.q.name, id, this.q.name, id, now],
        );
        if (row !== undefined) taken.push({ id, group_seq: row.group_seq });
      }
      return taken;
    }
    const inList = this.dialect.inJsonList('id', 'text');
    return this.c.query<TakenId>(
      `SELECT id, group_seq FROM leaseq_jobs WHERE queue = ? AND ${inList}
       UNION SELECT id, group_seq FROM leaseq_acked WHERE queue = ? AND ${inList} AND forget_at > ?`,
      [this.q.name, JSON.stringify(ids), this.q.name, JSON.stringify(ids), now],
    );
  }

  nextGeneratedId(): string {
    return generatedId(this.q.nextGeneratedId++);
  }

  async reserve(now: number, args: ReserveArgs): Promise<Delivery[]> {
    this.checkClock(now);
    if (args.session !== undefined) checkSessionKnown(args.session, this.q.nextSession);
    now = await this.advance(now);
    if (this.q.options.paused) {
      // R27: nothing is handed out; a closed session is still refused, as anywhere.
      if (args.session !== undefined) await this.openSession(args.session);
      return [];
    }
    if (args.ack === 'auto') {
      if (args.session !== undefined) await this.openSession(args.session);
      return this.handOut(now, Math.min(args.max, this.q.ready));
    }
    let count = Math.min(args.max, this.q.options.prefetch - this.q.active, this.q.ready);
    let ackTimeout: number | null = null;
    if (args.session !== undefined) {
      // Still refused when closed (R16) with nothing to take; what the session holds is counted
      // only where it bounds a take, in the same statement: each of many receivers in sessions
      // of their own that looks and finds nothing ready costs one round trip.
      const session = await this.openSessionHolding(args.session, count > 0);
      ackTimeout = session.ack_timeout;
      if (session.prefetch !== null) count = Math.min(count, session.prefetch - session.held);
    }
    if (count <= 0) return [];
    const visibility = args.visibility ?? this.q.options.visibility;
    const deadline = now + Math.min(visibility, this.q.options.maxLease);
    const session = args.session ?? null;
    const rows = await this.takeReady(count, async (head, take) => {
      // The front `take` jobs of the band are positions head … head + take − 1 (every band
      // before it is empty); each gets the next token in ready order, in one statement.
      const taken = await this.c.query<{
        id: string;
        payload: string | null;
        delivery_count: number;
        token: number;
        grp: string | null;
      }>(
        `UPDATE leaseq_jobs SET state = 'active', token = ? + ready_pos - ?, delivered_at = ?,
           deadline = ?, session = ?, delivery_count = delivery_count + 1, ready_pos = NULL
         WHERE queue = ? AND state = 'ready' AND ready_pos >= ? AND ready_pos < ?
         RETURNING id, payload, delivery_count, token, grp`,
        [this.q.nextToken, head, now, deadline, session, this.q.name, head, head + take],
      );
      taken.sort((a, b) => a.token - b.token);
      this.q.nextToken += taken.length;
      return taken;
    });
    const deliveries = rows.map((row) => deliveryOf(row, deadline));
    this.q.counters.deliveries += rows.length;
    this.q.counters.redeliveries += deliveries.filter((delivery) => delivery.redelivered).length;
    this.q.ready -= rows.length;
    this.q.active += rows.length;
    let nextEvent = deadline;
    if (ackTimeout !== null && now + ackTimeout < deadline) nextEvent = now + ackTimeout;
    if (rows.length > 0) this.q.nextEventAt = Math.min(this.q.nextEventAt, nextEvent);
    return deliveries;
  }

  /**
   * Takes the front `count` ready jobs, highest priority first (R23): `take(head, k)` takes the
   * front k of the band starting at `head`. A queue without priorities is one call.
   */
  private async takeReady<Row>(
    count: number,
    take: (head: number, k: number) => Promise<Row[]>,
  ): Promise<Row[]> {
    if (!hasRankedReady(this.q)) {
      const rows = await take(this.q.readyHead, count);
      this.q.readyHead += rows.length;
      return rows;
    }
    const rows: Row[] = [];
    for (const range of readyRanges(this.q)) {
      const k = Math.min(count - rows.length, range.size);
      if (k <= 0) break;
      const taken = await take(range.head, k);
      advanceHead(this.q, range.priority, taken.length);
      // One by one: spread as arguments, a band's 200,000 rows overflowed the call stack.
      for (const row of taken) rows.push(row);
    }
    return rows;
  }

  /** R22: the front `count` ready jobs leave the queue as they are handed out (at most once). */
  private async handOut(now: number, count: number): Promise<Delivery[]> {
    if (count <= 0) return [];
    const rows = await this.takeReady(count, async (head, take) => {
      const taken = await this.c.query<{
        id: string;
        payload: string | null;
        delivery_count: number;
        ready_pos: number;
        grp: string | null;
        group_seq: number | null;
      }>(
        `DELETE FROM leaseq_jobs WHERE queue = ? AND state = 'ready' AND ready_pos >= ? AND ready_pos < ?
         RETURNING id, payload, delivery_count, ready_pos, grp, group_seq`,
        [this.q.name, head, head + take],
      );
      return taken.sort((a, b) => a.ready_pos - b.ready_pos);
    });
    const firstToken = this.q.nextToken;
    const deliveries = rows.map((row, index) => ({
      token: firstToken + index,
      id: row.id,
      payload: decodePayload(row.payload),
      deadline: now,
      deliveryCount: row.delivery_count + 1,
      redelivered: row.delivery_count + 1 > 1,
      ...(row.grp === null ? {} : { group: row.grp }),
    }));
    this.q.nextToken += rows.length;
    this.q.ready -= rows.length;
    for (const row of rows) if (row.grp !== null) await this.advanceGroup(row.grp, now);
    this.q.counters.deliveries += rows.length;
    this.q.counters.autoAcked += rows.length;
    this.q.counters.redeliveries += deliveries.filter((delivery) => delivery.redelivered).length;
    await this.remember(now, rows);
    return deliveries;
  }

  async ack(now: number, tokens: readonly number[]): Promise<boolean[]> {
    now = await this.advance(now);
    const deleted = await this.c.query<{
      id: string;
      token: number;
      delivered_at: number;
      grp: string | null;
      group_seq: number | null;
      session: string | null;
    }>(
      `DELETE FROM ${this.dialect.jobsByToken} WHERE queue = ? AND ${this.dialect.inJsonList('token', 'integer')}
       RETURNING id, token, delivered_at, grp, group_seq, session`,
      [this.q.name, JSON.stringify(tokens)],
    );
    if (deleted.some((row) => row.session !== null)) this.sessionDeliveryAcked = true;
    const live = new Map(deleted.map((row) => [row.token, row]));
    const grouped = deleted.filter((row) => row.grp !== null);
    const results = tokens.map((token) => {
      const row = live.get(token);
      live.delete(token);
      if (row !== undefined) this.countAck(now, row.delivered_at);
      else this.q.counters.staleAcks += 1;
      return row !== undefined;
    });
    await this.remember(now, deleted);
    this.q.active -= deleted.length;
    if (grouped.length > 0) await this.advanceGroups(grouped, tokens, now);
    return results;
  }

  /** R24: the groups of acked jobs go on, in the order the tokens were named (as the core). */
  private async advanceGroups(
    acked: readonly { token: number; grp: string | null }[],
    tokens: readonly number[],
    now: number,
  ): Promise<void> {
    const groups = new Map(acked.map((row) => [row.token, row.grp as string]));
    for (const token of tokens) {
      const grp = groups.get(token);
      groups.delete(token);
      if (grp !== undefined) await this.advanceGroup(grp, now);
    }
  }

  async nack(now: number, token: number, nack: NackDisposition): Promise<boolean> {
    now = await this.advance(now);
    const row = await this.liveDelivery(token);
    if (row === undefined) {
      this.q.counters.staleNacks += 1;
      return false;
    }
    await this.settleNacks([row], now, nack);
    return true;
  }

  async extend(now: number, token: number, visibility: number): Promise<number | null> {
    now = await this.advance(now);
    const row = await this.liveDelivery(token);
    if (row === undefined) {
      this.q.counters.staleExtends += 1;
      return null;
    }
    const deadline = Math.min(now + visibility, row.delivered_at + this.q.options.maxLease);
    if (deadline <= now) {
      // A maxLease lowered since the delivery, already passed: the lease ends at this call, as
      // R3 ends any lease at its deadline (R10), not at the next call.
      this.q.counters.extensions += 1;
      this.leaseShortened = true;
      await this.release([{ row, outcome: 'expired' }], now);
      return deadline;
    }
    await this.c.run('UPDATE leaseq_jobs SET deadline = ? WHERE queue = ? AND token = ?', [
      deadline,
      this.q.name,
      token,
    ]);
    // A shorter lease, or an ack timeout that can now trip, may come sooner than we thought.
    this.q.nextEventAt = Math.min(this.q.nextEventAt, deadline);
    if (deadline < Number(row.deadline)) this.leaseShortened = true;
    if (row.session !== null) {
      const [session] = await this.c.query<{ ack_timeout: number | null }>(
        'SELECT ack_timeout FROM leaseq_sessions WHERE queue = ? AND id = ?',
        [this.q.name, row.session],
      );
      const at = session?.ack_timeout == null ? null : row.delivered_at + session.ack_timeout;
      if (at !== null && at < deadline) this.q.nextEventAt = Math.min(this.q.nextEventAt, at);
    }
    this.q.counters.extensions += 1;
    return deadline;
  }

  async openSessionAt(now: number, options: SessionLimits): Promise<string> {
    now = await this.advance(now);
    const id = sessionIdOf(this.q.nextSession++);
    await this.c.run(
      `INSERT INTO leaseq_sessions (queue, id, prefetch, timeout, ack_timeout, last_heartbeat)
       VALUES (?, ?, ?, ?, ?, ?)`,
      [
        this.q.name,
        id,
        INFINITY_AS_NULL(options.prefetch),
        INFINITY_AS_NULL(options.timeout),
        INFINITY_AS_NULL(options.ackTimeout),
        now,
      ],
    );
    this.q.sessions += 1;
    this.q.nextEventAt = Math.min(this.q.nextEventAt, now + options.timeout);
    return id;
  }

  async heartbeat(now: number, sessionId: string): Promise<void> {
    this.checkClock(now);
    checkSessionKnown(sessionId, this.q.nextSession);
    now = await this.advance(now);
    await this.openSession(sessionId);
    await this.c.run('UPDATE leaseq_sessions SET last_heartbeat = ? WHERE queue = ? AND id = ?', [
      now,
      this.q.name,
      sessionId,
    ]);
  }

  async closeSession(now: number, sessionId: string): Promise<number> {
    this.checkClock(now);
    checkSessionKnown(sessionId, this.q.nextSession);
    now = await this.advance(now);
    await this.openSession(sessionId);
    const released = await this.endSession(sessionId, now);
    await this.release(released, now);
    return released.length;
  }

  /** R11: every live delivery of the session with a token ≤ `token`, in token order. */
  async upTo(now: number, sessionId: string, token: number): Promise<DeliveryRow[]> {
    this.checkClock(now);
    checkSessionKnown(sessionId, this.q.nextSession);
    now = await this.advance(now);
    await this.openSession(sessionId);
    return this.c.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs
       WHERE queue = ? AND state = 'active' AND session = ? AND token <= ? ORDER BY token`,
      [this.q.name, sessionId, token],
    );
  }

  async ackRows(now: number, rows: readonly DeliveryRow[]): Promise<number> {
    if (rows.length > 0)
      await this.ack(
        now,
        rows.map((row) => row.token),
      );
    return rows.length;
  }

  /** Nacks live deliveries given in token order, as one step. */
  async settleNacks(
    rows: readonly DeliveryRow[],
    now: number,
    nack: NackDisposition,
  ): Promise<number> {
    this.q.counters.nacks += rows.length;
    if (!nack.attempted) this.q.counters.unworked += rows.length;
    if (!nack.requeue) {
      await this.deadLetterMany(
        rows.map((row) => ({
          row,
          attempt: attemptOf(row, now, 'rejected', nack.reason, nack.error),
        })),
        now,
        nack.reason,
        nackKind(nack.reason),
      );
      return rows.length;
    }
    // R33: one given back unworked records no attempt and takes back its count.
    const ended = rows.map((row) =>
      nack.attempted
        ? { row, attempt: attemptOf(row, now, 'requeued', undefined, nack.error) }
        : { row: { ...row, delivery_count: row.delivery_count - 1 }, attempt: undefined },
    );
    await this.requeue(ended, now, nack.delay);
    return rows.length;
  }

  /** R14. `page`: the front of the dead set only (a step of a redrive of all, see DeadPage). */
  async redrive(now: number, ids: readonly string[] | undefined, page?: DeadPage): Promise<number> {
    now = await this.advance(now);
    const jobs = await this.deadJobs(ids, page);
    /** Groups known to have a member that is not dead (R24): a redriven job of one waits. */
    const occupied = new Map<string, boolean>();
    const rows: RedrivenRow[] = [];
    for (const job of jobs) {
      this.q.dead -= 1;
      const row: RedrivenRow = {
        id: job.id,
        state: 'ready',
        ready_pos: job.ready_pos,
        ready_since: job.ready_since,
        group_seq: job.group_seq,
        available_at: job.available_at,
      };
      rows.push(row);
      // A redriven job joins the back of its group (R24): it waits if the group has members.
      if (job.grp !== null) {
        const waits = occupied.get(job.grp) ?? (await this.groupHasMembers(job.grp));
        occupied.set(job.grp, true);
        row.group_seq = this.q.nextSeq++;
        row.available_at = now;
        if (waits) {
          this.q.waiting += 1;
          row.state = 'waiting';
          continue;
        }
      }
      this.q.ready += 1;
      row.ready_pos = backPosition(this.q, job.priority);
      row.ready_since = now;
    }
    await this.writeRedriven(rows);
    this.q.counters.redriven += jobs.length;
    if (jobs.length > 0) this.expiryMayBeDue(now);
    return jobs.length;
  }

  /** Stores redriven jobs as `redrive` placed them, each found by its primary key. */
  private async writeRedriven(rows: readonly RedrivenRow[]): Promise<void> {
    if (rows.length === 0) return;
    const set = (value: (column: keyof RedrivenRow) => string) =>
      `state = ${value('state')}, delivery_count = 0, dead_reason = NULL, dead_at = NULL,
       dead_seq = NULL, ready_pos = ${value('ready_pos')}, ready_since = ${value('ready_since')},
       group_seq = ${value('group_seq')}, available_at = ${value('available_at')}`;
    if (this.dialect.setBased) {
      // One statement, not a round trip per job.
      await this.c.run(
        `UPDATE leaseq_jobs SET ${set((column) => `r.${column}`)}
         FROM ${this.dialect.jsonRecords(REDRIVEN_COLUMNS)} AS r
         WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
        [JSON.stringify(rows), this.q.name],
      );
      return;
    }
    await this.c.runEach(
      `UPDATE leaseq_jobs SET ${set(() => '?')} WHERE queue = ? AND id = ?`,
      rows.map((row) => [
        row.state,
        row.ready_pos,
        row.ready_since,
        row.group_seq,
        row.available_at,
        this.q.name,
        row.id,
      ]),
    );
  }

  /** R14. `page`: the front of the dead set only (a step of a purge of all, see DeadPage). */
  async purge(now: number, ids: readonly string[] | undefined, page?: DeadPage): Promise<number> {
    now = await this.advance(now);
    let purged: number;
    if (ids !== undefined) {
      purged = await this.deleteJobs((await this.deadJobs(ids)).map((job) => job.id));
    } else if (page === undefined) {
      // Every dead job, in one unit (purgeQueue's `dead`, a purge in a batch): in steps where
      // statements run in this process, as purgeQueue's live jobs.
      purged = await deleteInSteps(
        this.c,
        this.dialect,
        this.batch,
        'leaseq_jobs',
        this.q.name,
        "state = 'dead'",
      );
    } else {
      page.through ??= this.q.deadSeq;
      purged = await this.c.run(
        `DELETE FROM leaseq_jobs WHERE queue = ? AND id IN (SELECT id FROM leaseq_jobs
           WHERE queue = ? AND state = 'dead' AND dead_seq <= ? ORDER BY dead_seq LIMIT ?)`,
        [this.q.name, this.q.name, page.through, page.limit],
      );
    }
    this.q.dead -= purged;
    this.q.counters.purged += purged;
    return purged;
  }

  /** Deletes the jobs named, each found by its primary key; answers how many. */
  private async deleteJobs(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    if (this.dialect.setBased) {
      await this.c.run(
        `DELETE FROM leaseq_jobs WHERE queue = ? AND ${this.dialect.inJsonList('id', 'text')}`,
        [this.q.name, JSON.stringify(ids)],
      );
    } else {
      await this.c.runEach(
        'DELETE FROM leaseq_jobs WHERE queue = ? AND id = ?',
        ids.map((id) => [this.q.name, id]),
      );
    }
    return ids.length;
  }

  /** R19: every ready, delayed and active job goes (dead ones too with `withDead`). */
  async purgeQueue(now: number, withDead: boolean): Promise<PurgeQueueResult> {
    now = await this.advance(now);
    const removed = {
      ready: this.q.ready + this.q.waiting,
      delayed: this.q.delayed,
      active: this.q.active,
      dead: 0,
    };
    await deleteInSteps(
      this.c,
      this.dialect,
      this.batch,
      'leaseq_jobs',
      this.q.name,
      "state IN ('ready', 'delayed', 'active', 'waiting')",
    );
    this.q.ready = 0;
    this.q.waiting = 0;
    this.q.delayed = 0;
    this.q.active = 0;
    emptyBands(this.q);
    this.q.counters.purged += removed.ready + removed.delayed + removed.active;
    if (withDead) removed.dead = await this.purge(now, undefined);
    return removed;
  }

  async stats(now: number): Promise<QueueStats> {
    now = await this.advance(now);
    const [oldest] = await this.c.query<{ since: number | null }>(this.dialect.oldestReadyOf('?'), [
      this.q.name,
    ]);
    return statsOfRow(this.q, now, oldest?.since ?? null);
  }

  /**
   * R26: ready jobs (front first), then delayed ones, each to `to` or to its origin queue; a
   * job the target cannot take stays, and a group moves whole (the next member goes on as the
   * one before it moves). The ready jobs left keep their order, the gaps closed. A chunk of jobs
   * at a time: what judging them needs is looked up for all of them at once, then each is judged
   * in order, in memory, and the rows of the chunk are written together (a few statements a job
   * made 200,000 moved on PostgreSQL take minutes).
   *
   * With `run`, this is one step of a call that takes steps, each a transaction of its own (see
   * MoveRun): a chunk, or more while closing the gaps of one would renumber more ready jobs than
   * STEP_RENUMBER_BOUND. Answers how many jobs this step moved; `run.done` says whether the call
   * is over. Without, the whole call.
   */
  async moveJobs(now: number, op: MoveJobsOperation, run?: MoveRun): Promise<number> {
    now = await this.advance(now);
    const links = this.links;
    const steps = run !== undefined;
    run ??= new MoveRun(op);
    if (links === undefined) {
      run.done = true;
      return 0;
    }
    const moves = run;
    const max = op.max ?? Number.POSITIVE_INFINITY;
    const origins = op.origins === undefined ? undefined : new Set(op.origins);
    /** Where the job goes: `to`, or its origin; undefined when it stays. */
    const moverOf = (
      job: Pick<MovableRow, 'id' | 'origin_queue' | 'priority' | 'grp'>,
    ): Mover | undefined => {
      const origin = job.origin_queue ?? undefined;
      if (origins !== undefined && (origin === undefined || !origins.has(origin))) return undefined;
      const target = op.to ?? origin;
      if (target === undefined) return undefined;
      return { id: job.id, target, priority: job.priority, grp: job.grp };
    };
    await moves.resume(this);
    const arrivals = links.arrivals(this.q, now);
    const members = new WaitingMembers(this.c, this.dialect, this.q.name);
    const movedBefore = moves.moved;
    /** Ready positions left free, by priority. */
    const gaps = new Map<number, number[]>();
    /** Whether this step goes on to the end of the call (see STEP_RENUMBER_BOUND). */
    let whole = !steps;
    /**
     * Jobs this step looked at. A step goes on to MOVE_CHUNK of them, not one chunk of `max`:
     * a job the target refuses leaves room for more, and every further step is a call's step
     * of its own (R3 again), where a member that went on past its expiry would die (R30).
     */
    let lookedHere = 0;
    // One list, each job looked at once; a group member that goes on as the one before it
    // moves joins its end (when no ids are named, or it is), so a group moves whole.
    while (moves.moved < max) {
      const budget = whole ? MOVE_CHUNK : MOVE_CHUNK - lookedHere;
      // No more than `max` leaves room for: looking a job's target up locks the target's row
      // (as admit does), and a queue no job goes to is not to be held up. (Where the storage
      // keeps a lock per queue, the targets the call may have were locked first: queuesMovesLock.)
      const room = max - moves.moved;
      const chunk = await moves.upcoming(this, Math.min(budget, room));
      if (chunk.length === 0) break;
      const groups = [...new Set(chunk.flatMap((job) => (job.grp === null ? [] : [job.grp])))];
      await members.lookUp(groups, this.q.waiting === 0);
      // The members that may go on and follow in this chunk are judged from the same look-ups,
      // where `max` leaves room for them after the chunk's own jobs.
      const following =
        room > chunk.length
          ? members
              .following(groups)
              .filter((job) => moves.follows(job))
              .slice(0, room - chunk.length)
          : [];
      await arrivals.lookUp([...chunk, ...following].flatMap((job) => moverOf(job) ?? []));
      const promoted: PromotedRow[] = [];
      const movedHere = new Set<string>();
      let looked = 0;
      while (moves.moved < max && looked < budget) {
        const job = moves.peek();
        if (job === undefined) break;
        const seen = moves.hasSeen(job.id);
        const mover = seen ? undefined : moverOf(job);
        // Not looked up (a member gone on past those looked up): the next chunk does.
        if (mover !== undefined && !arrivals.knows(mover)) break;
        moves.take();
        looked += 1;
        if (seen) continue;
        moves.see(job.id);
        if (mover === undefined || !arrivals.take(mover)) continue;
        moves.moved += 1;
        movedHere.add(job.id);
        if (job.state === 'ready') {
          this.q.ready -= 1;
          const band = gaps.get(job.priority) ?? [];
          band.push(Number(job.ready_pos));
          gaps.set(job.priority, band);
        } else {
          this.q.delayed -= 1;
        }
        // A moved job was its group's first member: the next one goes on (R24).
        if (job.grp !== null) {
          const next = await this.goOn(members, job.grp, now, promoted);
          if (next !== undefined && moves.follows(next)) moves.follow(next);
        }
      }
      await this.writePromoted(promoted.filter((row) => !movedHere.has(row.id)));
      await arrivals.write();
      lookedHere += looked;
      if (!whole && lookedHere >= MOVE_CHUNK) {
        if (this.gapMoves(gaps, moves) <= STEP_RENUMBER_BOUND) break;
        // Closing them costs no less as the call goes on: the rest is this step.
        whole = true;
      }
    }
    // A step that leaves nothing to look at ends the call, rather than a step more finding so.
    if (steps && moves.moved < max) await moves.lookAhead(this);
    moves.done = moves.moved >= max || moves.exhausted();
    for (const [priority, positions] of gaps) {
      await this.closeReadyGaps(priority, positions, moves.readPlace(priority));
    }
    return moves.moved - movedBefore;
  }

  /** How many ready jobs closing these gaps would move (see closeReadyGaps). */
  private gapMoves(gaps: ReadonlyMap<number, number[]>, moves: MoveRun): number {
    let total = 0;
    for (const [priority, positions] of gaps) {
      positions.sort((a, b) => a - b);
      const place = moves.readPlace(priority) ?? Number.POSITIVE_INFINITY;
      total += this.gapClosingMoves(priority, positions, place);
    }
    return total;
  }

  /**
   * `advanceGroup` within `moveJobs`: the next waiting member of group `grp`, from those looked
   * up, goes to the back of ready or to delayed; its row is written with the chunk's
   * (`writePromoted`). Answers it as `moveJobs` may move it, with its place in publish order.
   */
  private async goOn(
    members: WaitingMembers,
    grp: string,
    now: number,
    promoted: PromotedRow[],
  ): Promise<(MovableRow & { seq: number }) | undefined> {
    const next = await members.next(grp);
    if (next === undefined) return undefined;
    const row = this.goesOn(next, now);
    promoted.push(row);
    return {
      id: next.id,
      origin_queue: next.origin_queue,
      priority: next.priority,
      grp: next.grp,
      state: row.state,
      ready_pos: row.ready_pos,
      seq: next.seq,
    };
  }

  /** Stores members `goOn` made ready or delayed, as `advanceGroup` would have. */
  private async writePromoted(rows: readonly PromotedRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect.setBased) {
      await this.c.run(
        `UPDATE leaseq_jobs SET state = r.state,
           ready_pos = CASE WHEN r.state = 'ready' THEN r.ready_pos ELSE leaseq_jobs.ready_pos END,
           ready_since = CASE WHEN r.state = 'ready' THEN r.ready_since ELSE leaseq_jobs.ready_since END
         FROM ${this.dialect.jsonRecords(PROMOTED_COLUMNS)} AS r
         WHERE leaseq_jobs.queue = ? AND leaseq_jobs.id = r.id`,
        [JSON.stringify(rows), this.q.name],
      );
      return;
    }
    await this.c.runEach(
      `UPDATE leaseq_jobs SET state = 'delayed' WHERE queue = ? AND id = ?`,
      rows.filter((row) => row.state === 'delayed').map((row) => [this.q.name, row.id]),
    );
    await this.c.runEach(
      `UPDATE leaseq_jobs SET state = 'ready', ready_pos = ?, ready_since = ?
       WHERE queue = ? AND id = ?`,
      rows
        .filter((row) => row.state === 'ready')
        .map((row) => [row.ready_pos, row.ready_since, this.q.name, row.id]),
    );
  }

  /**
   * R28: the job leaves ready, delayed or its live delivery (recorded as `cancelled`), then
   * dies with reason `cancelled` in this queue's own dead set, or is deleted with `remove`.
   */
  async cancel(now: number, id: string, remove: boolean): Promise<boolean> {
    now = await this.advance(now);
    const [row] = await this.c.query<{ state: JobState; ready_pos: number | null } & DeliveryRow>(
      `SELECT state, ready_pos, ${DELIVERY_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND id = ?`,
      [this.q.name, id],
    );
    if (row === undefined || row.state === 'dead') return false;
    let history = row.history;
    if (row.state === 'ready') this.q.ready -= 1;
    else if (row.state === 'delayed') this.q.delayed -= 1;
    else if (row.state === 'waiting') this.q.waiting -= 1;
    else {
      this.q.active -= 1;
      // Its session's prefetch room is free again (R28), as after an ack.
      if (row.session !== null) this.sessionDeliveryAcked = true;
      history = appendHistory(row.history, attemptOf(row, now, 'cancelled'));
      this.links?.deliveryCancelled(this.q.name, row.token);
    }
    this.q.counters.cancelled += 1;
    if (remove) {
      await this.c.run('DELETE FROM leaseq_jobs WHERE queue = ? AND id = ?', [this.q.name, id]);
    } else {
      this.q.deadSeq += 1;
      this.q.dead += 1;
      const counts = this.q.counters.deadLetters;
      counts.cancelled = (counts.cancelled ?? 0) + 1;
      await this.c.run(
        `UPDATE leaseq_jobs SET state = 'dead', dead_reason = 'cancelled', dead_at = ?,
           dead_seq = ?, ready_pos = NULL, token = NULL, delivered_at = NULL, deadline = NULL,
           session = NULL, history = ?
         WHERE queue = ? AND id = ?`,
        [now, this.q.deadSeq, history, this.q.name, id],
      );
    }
    // Before the group's next member may join the back of the band: the gap is closed in the
    // band as it stood.
    if (row.state === 'ready') await this.closeReadyGap(row.priority, Number(row.ready_pos));
    // The group's first member leaving lets the next go on (R24); a waiting one just leaves.
    if (row.grp !== null && row.state !== 'waiting') await this.advanceGroup(row.grp, now);
    return true;
  }

  /** The jobs named that are ready or delayed, as moveJobs looks at them, in the order named. */
  async movableJobs(ids: readonly string[]): Promise<MovableRow[]> {
    if (this.dialect.setBased) {
      // A chunk of primary-key lookups a statement; the state is checked here, as in deadJobs.
      const found = new Map<string, MovableRow>();
      const distinct = [...new Set(ids)];
      for (let start = 0; start < distinct.length; start += MOVE_CHUNK) {
        const rows = await this.c.query<Omit<MovableRow, 'state'> & { state: JobState }>(
          `SELECT ${MOVABLE_COLUMNS} FROM leaseq_jobs
           WHERE queue = ? AND ${this.dialect.inJsonList('id', 'text')}`,
          [this.q.name, JSON.stringify(distinct.slice(start, start + MOVE_CHUNK))],
        );
        for (const row of rows) {
          if (row.state === 'ready' || row.state === 'delayed') {
            found.set(row.id, { ...row, state: row.state });
          }
        }
      }
      return ids.flatMap((id) => found.get(id) ?? []);
    }
    const rows: MovableRow[] = [];
    for (const id of ids) {
      const [row] = await this.c.query<MovableRow>(
        `SELECT ${MOVABLE_COLUMNS} FROM leaseq_jobs
         WHERE queue = ? AND id = ? AND state IN ('ready', 'delayed')`,
        [this.q.name, id],
      );
      if (row !== undefined) rows.push(row);
    }
    return rows;
  }

  // --- inspection (takes no time) -------------------------------------------------------------

  /** `limit`: the most rows each list's query reads (its first ones), undefined for all. */
  async inspect(limit?: number): Promise<InspectView> {
    const name = this.q.name;
    // The limit reaches the storage: a long list's rows past the first `limit` are never read.
    const cut = limit === undefined ? '' : ' LIMIT ?';
    const params = limit === undefined ? [name] : [name, limit];
    const ready = await this.c.query<{ id: string }>(
      `SELECT id FROM leaseq_jobs WHERE queue = ? AND state = 'ready' ORDER BY ready_pos${cut}`,
      params,
    );
    const delayed = await this.c.query<{ id: string; available_at: number }>(
      `SELECT id, available_at FROM leaseq_jobs WHERE queue = ? AND state = 'delayed'
       ORDER BY available_at, seq${cut}`,
      params,
    );
    // Only live deliveries hold a token: `token IS NOT NULL` walks its index in token order
    // (without it, SQLite read every job of the queue and sorted the active ones: 0.5 s at 10^6).
    const active = await this.c.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs
       WHERE queue = ? AND token IS NOT NULL AND state = 'active' ORDER BY token${cut}`,
      params,
    );
    const dead = await this.c.query<{ id: string; dead_reason: string; delivery_count: number }>(
      `SELECT id, dead_reason, delivery_count FROM leaseq_jobs WHERE queue = ? AND state = 'dead'
       ORDER BY dead_seq${cut}`,
      params,
    );
    const waiting =
      this.q.waiting === 0
        ? []
        : await this.c.query<{ id: string }>(
            `SELECT id FROM leaseq_jobs WHERE queue = ? AND state = 'waiting' ORDER BY group_seq${cut}`,
            params,
          );
    return {
      queueTime: this.q.queueTime,
      ready: ready.map((row) => row.id),
      delayed: delayed.map((row) => ({ id: row.id, availableAt: row.available_at })),
      active: active.map((row) => ({
        token: row.token,
        id: row.id,
        deadline: row.deadline,
        deliveryCount: row.delivery_count,
        ...(row.session === null ? {} : { session: row.session }),
      })),
      dead: dead.map((row) => ({
        id: row.id,
        reason: row.dead_reason,
        deliveryCount: row.delivery_count,
      })),
      ...(waiting.length === 0 ? {} : { waiting: waiting.map((row) => row.id) }),
    };
  }

  async deliveries(): Promise<LiveDelivery[]> {
    const rows = await this.c.query<LiveDeliveryRow>(
      `SELECT ${LIVE_DELIVERY_COLUMNS} FROM leaseq_jobs
       WHERE queue = ? AND token IS NOT NULL AND state = 'active' ORDER BY token`,
      [this.q.name],
    );
    return rows.map(liveDeliveryOf);
  }

  /**
   * A page of live deliveries (see LeaseQueue.deliveryPage): a range of the token index from
   * the cursor on, cut by LIMIT, so a poll of the first page of thousands reads a page's rows.
   */
  async deliveryPage(page: { limit: number; after: number }): Promise<DeliveryPage> {
    // One more than the page: whether a next one starts after it.
    const rows = await this.c.query<LiveDeliveryRow>(
      `SELECT ${LIVE_DELIVERY_COLUMNS} FROM leaseq_jobs
       WHERE queue = ? AND token IS NOT NULL AND token > ? AND state = 'active'
       ORDER BY token LIMIT ?`,
      [this.q.name, page.after, page.limit + 1],
    );
    const deliveries = rows.slice(0, page.limit).map(liveDeliveryOf);
    if (rows.length <= page.limit) return { deliveries };
    return { deliveries, next: deliveryCursor(Number(rows[page.limit - 1]?.token)) };
  }

  /**
   * Every dead letter, in the order they died: one statement where round trips cost; where
   * statements run in this process (SQLite), DELETE_STEP at a time through the dead index with a
   * turn of the event loop between two, in the one transaction (in one statement, 1,000,000 dead
   * jobs held the process for 40 s).
   */
  async deadLetters(): Promise<DeadLetter[]> {
    if (this.dialect.setBased) {
      const rows = await this.c.query<JobRowView>(
        `SELECT ${JOB_VIEW_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'dead' ORDER BY dead_seq`,
        [this.q.name],
      );
      return rows.map(deadLetterOf);
    }
    const deadLetters: DeadLetter[] = [];
    for (let after = 0; ; ) {
      if (after > 0) await this.batch.turn();
      const rows = await this.c.query<JobRowView & { dead_seq: number }>(
        `SELECT ${JOB_VIEW_COLUMNS}, dead_seq FROM leaseq_jobs
         WHERE queue = ? AND state = 'dead' AND dead_seq > ? ORDER BY dead_seq LIMIT ?`,
        [this.q.name, after, DELETE_STEP],
      );
      for (const row of rows) deadLetters.push(deadLetterOf(row));
      const last = rows.at(-1);
      if (rows.length < DELETE_STEP || last === undefined) return deadLetters;
      after = Number(last.dead_seq);
    }
  }

  /**
   * A page of dead letters (see LeaseQueue.deadLetterPage), through the dead index in order.
   * Without payloads the payload column is not selected: no payload leaves the storage (and
   * PostgreSQL reads none of its out-of-line, TOASTed, values; SQLite reads the page from an
   * index, not from the rows, whose columns after the payload lie past its overflow pages).
   */
  async deadLetterPage(page: {
    limit: number;
    after: number;
    payloads: boolean;
  }): Promise<DeadLetterPage> {
    if (page.payloads) return this.deadLetterPageWithPayloads(page);
    // One more than the page: whether a next one starts after it.
    const rows = await this.c.query<DeadLetterRow & { dead_seq: number }>(
      `SELECT ${DEAD_LETTER_COLUMNS}, dead_seq FROM leaseq_jobs
       WHERE queue = ? AND state = 'dead' AND dead_seq > ? ORDER BY dead_seq LIMIT ?`,
      [this.q.name, page.after, page.limit + 1],
    );
    const deadLetters = rows.slice(0, page.limit).map(deadLetterOf);
    if (rows.length <= page.limit) return { deadLetters };
    return {
      deadLetters,
      next: deadLetterCursor(Number(rows[page.limit - 1]?.dead_seq)),
    };
  }

  /**
   * A page of dead letters with their payloads, which ends at the job whose payload text
   * reaches DEAD_LETTER_PAGE_CHARS (as the core's). Read a few jobs at a time, so that what is
   * read past that job stays small: one job first, then as many as the characters left would
   * hold of the longest payload read so far.
   */
  private async deadLetterPageWithPayloads(page: {
    limit: number;
    after: number;
  }): Promise<DeadLetterPage> {
    const deadLetters: DeadLetter[] = [];
    let chars = 0;
    let longest = 1;
    let after = page.after;
    const full = () => deadLetters.length === page.limit || chars >= DEAD_LETTER_PAGE_CHARS;
    for (;;) {
      const count =
        deadLetters.length === 0
          ? 1
          : Math.min(
              page.limit - deadLetters.length,
              Math.max(1, Math.floor((DEAD_LETTER_PAGE_CHARS - chars) / longest)),
            );
      const rows = await this.c.query<DeadLetterRow & { dead_seq: number }>(
        `SELECT ${JOB_VIEW_COLUMNS}, dead_seq FROM leaseq_jobs
         WHERE queue = ? AND state = 'dead' AND dead_seq > ? ORDER BY dead_seq LIMIT ?`,
        [this.q.name, after, count],
      );
      for (const row of rows) {
        // A job read past the end of the page: the next page starts with it.
        if (full()) return { deadLetters, next: deadLetterCursor(after) };
        deadLetters.push(deadLetterOf(row));
        const length = row.payload?.length ?? 0;
        chars += length;
        longest = Math.max(longest, length);
        after = Number(row.dead_seq);
      }
      if (rows.length < count) return { deadLetters };
      if (full()) break;
    }
    // Whether a next page starts after it, from the index of dead jobs alone.
    const [follows] = await this.c.query<{ one: number }>(
      `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND state = 'dead' AND dead_seq > ? LIMIT 1`,
      [this.q.name, after],
    );
    return follows === undefined ? { deadLetters } : { deadLetters, next: deadLetterCursor(after) };
  }

  async job(id: string): Promise<JobView | undefined> {
    const [row] = await this.c.query<JobRowView>(
      `SELECT ${JOB_VIEW_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND id = ?`,
      [this.q.name, id],
    );
    if (row === undefined) return undefined;
    return {
      id: row.id,
      payload: decodePayload(row.payload),
      state: row.state,
      deliveryCount: row.delivery_count,
      ...(row.published_at === null ? {} : { publishedAt: row.published_at }),
      ...(row.priority === 0 ? {} : { priority: row.priority }),
      ...(row.grp === null ? {} : { group: row.grp, groupSeq: row.group_seq as number }),
      ...(row.expires_at === null ? {} : { expiresAt: row.expires_at }),
      ...(row.state === 'delayed' ? { availableAt: row.available_at } : {}),
      ...(row.token === null ? {} : { token: row.token, deadline: row.deadline as number }),
      ...(row.state === 'dead'
        ? { reason: row.dead_reason as string, deadAt: row.dead_at as number }
        : {}),
      history: decodeHistory(row.history),
      ...originOf(row),
    };
  }

  // --- helpers --------------------------------------------------------------------------------

  private countAck(now: number, deliveredAt: number): void {
    const elapsed = now - deliveredAt;
    const timing = this.q.counters.processingTime;
    timing.count += 1;
    timing.sum += elapsed;
    if (elapsed > timing.max) timing.max = elapsed;
    this.q.counters.acks += 1;
  }

  /**
   * R4: acked ids refused as duplicates for the queue's de-duplication window, each with the
   * group sequence number a duplicate publish answers (R29).
   */
  private async remember(now: number, jobs: readonly TakenId[]): Promise<void> {
    const window = this.q.options.dedupWindow;
    if (window === 0 || jobs.length === 0) return;
    // The step that forgets them (see JobMoves.advance) comes by then at the latest.
    this.q.nextEventAt = Math.min(this.q.nextEventAt, now + window);
    await this.c.runEach(
      `INSERT INTO leaseq_acked (queue, id, forget_at, group_seq) VALUES (?, ?, ?, ?)
       ON CONFLICT (queue, id) DO UPDATE SET forget_at = excluded.forget_at,
         group_seq = excluded.group_seq`,
      jobs.map((job) => [this.q.name, job.id, now + window, job.group_seq]),
    );
  }

  /** The dead jobs named (each once, in the order named), or all in the order they died. */
  private async deadJobs(
    ids: readonly string[] | undefined,
    page?: DeadPage,
  ): Promise<DeadJobRow[]> {
    if (ids === undefined && page !== undefined) {
      page.through ??= this.q.deadSeq;
      return this.c.query<DeadJobRow>(
        `SELECT ${DEAD_JOB_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'dead' AND dead_seq <= ?
         ORDER BY dead_seq LIMIT ?`,
        [this.q.name, page.through, page.limit],
      );
    }
    if (ids === undefined) {
      return this.c.query<DeadJobRow>(
        `SELECT ${DEAD_JOB_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'dead' ORDER BY dead_seq`,
        [this.q.name],
      );
    }
    // One primary-key lookup each, the state checked here: with `state = 'dead'` in the
    // statement, PostgreSQL took the index of dead jobs and filtered every one by id, where its
    // statistics (from before they died) said it was nearly empty: O(dead) a job. Where round
    // trips cost, many a statement: one each made a step of a redrive of 100,000 ids hold its
    // queue for 1,000 round trips (67 s in all on PostgreSQL).
    const named = [...new Set(ids)];
    const rows: (DeadJobRow & { state: JobState })[] = [];
    if (this.dialect.setBased) {
      for (let start = 0; start < named.length; start += BULK_STEP) {
        rows.push(
          ...(await this.c.query<DeadJobRow & { state: JobState }>(
            `SELECT ${DEAD_JOB_COLUMNS}, state FROM leaseq_jobs
             WHERE queue = ? AND ${this.dialect.inJsonList('id', 'text')}`,
            [this.q.name, JSON.stringify(named.slice(start, start + BULK_STEP))],
          )),
        );
      }
    } else {
      for (const id of named) {
        const [row] = await this.c.query<DeadJobRow & { state: JobState }>(
          `SELECT ${DEAD_JOB_COLUMNS}, state FROM leaseq_jobs WHERE queue = ? AND id = ?`,
          [this.q.name, id],
        );
        if (row !== undefined) rows.push(row);
      }
    }
    // In the order named.
    const byId = new Map(rows.map((row) => [row.id, row]));
    return named.flatMap((id) => {
      const row = byId.get(id);
      return row?.state === 'dead' ? [row] : [];
    });
  }

  /**
   * Whether a dead job of `page` is left (dead when its first page was taken and not taken
   * since): a step of a redrive or purge of all that took a whole page ends the call when none is.
   */
  async deadLeft(page: DeadPage): Promise<boolean> {
    const rows = await this.c.query<{ one: number }>(
      `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND state = 'dead' AND dead_seq <= ? LIMIT 1`,
      [this.q.name, page.through ?? this.q.deadSeq],
    );
    return rows.length > 0;
  }

  /** After R3: the session must still be open. */
  /** A SessionClosedError unless the session is open (time already advanced). */
  async checkSessionOpen(sessionId: string): Promise<void> {
    checkSessionKnown(sessionId, this.q.nextSession);
    await this.openSession(sessionId);
  }

  /**
   * How many more deliveries each of `sessions` may hold (its prefetch less the live deliveries
   * it holds), for those of them that are open and have a prefetch: one statement for them all,
   * where a reserve asks two per session.
   */
  async sessionRoom(sessions: readonly string[]): Promise<Map<string, number>> {
    if (sessions.length === 0) return new Map();
    const rows = await this.c.query<{ id: string; room: number | string }>(
      `SELECT s.id, s.prefetch - (SELECT COUNT(*) FROM leaseq_jobs AS j
         WHERE j.queue = s.queue AND j.state = 'active' AND j.session = s.id) AS room
       FROM leaseq_sessions AS s
       WHERE s.queue = ? AND s.prefetch IS NOT NULL AND s.id IN ${this.dialect.jsonList('text')}`,
      [this.q.name, JSON.stringify(sessions)],
    );
    return new Map(rows.map((row) => [row.id, Number(row.room)]));
  }

  /**
   * As openSession, with the jobs the session holds (`held`, R16) where `counted` and its
   * prefetch bounds it; 0 otherwise.
   */
  private async openSessionHolding(
    sessionId: string,
    counted: boolean,
  ): Promise<{ prefetch: number | null; ack_timeout: number | null; held: number }> {
    if (!counted) return { ...(await this.openSession(sessionId)), held: 0 };
    const [session] = await this.c.query<{
      prefetch: number | null;
      ack_timeout: number | null;
      held: number | string;
    }>(
      `SELECT s.prefetch, s.ack_timeout, CASE WHEN s.prefetch IS NULL THEN 0 ELSE
         (SELECT COUNT(*) FROM leaseq_jobs AS j
          WHERE j.queue = s.queue AND j.state = 'active' AND j.session = s.id) END AS held
       FROM leaseq_sessions AS s WHERE s.queue = ? AND s.id = ?`,
      [this.q.name, sessionId],
    );
    if (session === undefined) throw new SessionClosedError(sessionId);
    return {
      prefetch: session.prefetch,
      ack_timeout: session.ack_timeout,
      held: Number(session.held),
    };
  }

  private async openSession(
    sessionId: string,
  ): Promise<{ prefetch: number | null; ack_timeout: number | null }> {
    const [session] = await this.c.query<{ prefetch: number | null; ack_timeout: number | null }>(
      'SELECT prefetch, ack_timeout FROM leaseq_sessions WHERE queue = ? AND id = ?',
      [this.q.name, sessionId],
    );
    if (session === undefined) throw new SessionClosedError(sessionId);
    return session;
  }
}

/**
 * The front of a queue's dead set, in the order its jobs died (R34): at most `limit` of the jobs
 * dead when the first page was taken (`through`: the last place in the dead set given by then,
 * set by that page). A redrive or purge of all, in steps, takes it page after page: a job that
 * dies meanwhile, or dies again once redriven, is not taken.
 */
export interface DeadPage {
  through?: number;
  limit: number;
}

/** A dead job with what a redrive keeps of it unless it joins ready or a group anew. */
interface DeadJobRow {
  id: string;
  priority: number;
  grp: string | null;
  ready_pos: number | null;
  ready_since: number | null;
  group_seq: number | null;
  available_at: number;
}

const DEAD_JOB_COLUMNS = 'id, priority, grp, ready_pos, ready_since, group_seq, available_at';

/** A redriven job's row as `redrive` stores it. */
interface RedrivenRow {
  id: string;
  state: 'ready' | 'waiting';
  ready_pos: number | null;
  ready_since: number | null;
  group_seq: number | null;
  available_at: number;
}

const REDRIVEN_COLUMNS = [
  ['id', 'text'],
  ['state', 'text'],
  ['ready_pos', 'integer'],
  ['ready_since', 'integer'],
  ['group_seq', 'integer'],
  ['available_at', 'integer'],
] as const;

interface JobRowView {
  id: string;
  payload: string | null;
  state: JobState;
  delivery_count: number;
  available_at: number;
  token: number | null;
  deadline: number | null;
  dead_reason: string | null;
  dead_at: number | null;
  history: string | null;
  published_at: number | null;
  priority: number;
  grp: string | null;
  group_seq: number | null;
  origin_queue: string | null;
  origin_reason: string | null;
  origin_at: number | null;
  expires_at: number | null;
}

/** What a dead letter is read from: DEAD_LETTER_COLUMNS, and `payload` when it was selected. */
type DeadLetterRow = Pick<
  JobRowView,
  | 'id'
  | 'delivery_count'
  | 'dead_reason'
  | 'dead_at'
  | 'history'
  | 'origin_queue'
  | 'origin_reason'
  | 'origin_at'
> & { payload?: string | null };

/** The columns a live delivery is listed with (no history: a listing shows none). */
const LIVE_DELIVERY_COLUMNS = 'id, token, delivered_at, deadline, session, delivery_count';
type LiveDeliveryRow = Pick<
  DeliveryRow,
  'id' | 'token' | 'delivered_at' | 'deadline' | 'session' | 'delivery_count'
>;

function liveDeliveryOf(row: LiveDeliveryRow): LiveDelivery {
  return {
    token: row.token,
    id: row.id,
    deliveredAt: row.delivered_at,
    deadline: row.deadline,
    deliveryCount: row.delivery_count,
    ...(row.session === null ? {} : { session: row.session }),
  };
}

function deadLetterOf(row: DeadLetterRow): DeadLetter {
  return {
    id: row.id,
    ...(row.payload === undefined ? {} : { payload: decodePayload(row.payload) }),
    reason: row.dead_reason as string,
    deliveryCount: row.delivery_count,
    deadAt: row.dead_at as number,
    history: decodeHistory(row.history),
    ...originOf(row),
  };
}

const JOB_VIEW_COLUMNS =
  'id, payload, state, delivery_count, available_at, token, deadline, dead_reason, dead_at, history, published_at, priority, grp, group_seq, origin_queue, origin_reason, origin_at, expires_at';

/**
 * The columns of a dead letter but its payload (see DeadLetterRow). On SQLite the index
 * leaseq_jobs_dead_letters holds them all (migration 0017): a column added here needs it too,
 * or the page reads every job's row again, past its payload.
 */
const DEAD_LETTER_COLUMNS =
  'id, delivery_count, dead_reason, dead_at, history, origin_queue, origin_reason, origin_at';

/** An id that is taken (present or remembered, R4), with its group sequence number (R29). */
interface TakenId {
  id: string;
  group_seq: number | null;
}

const PROMOTED_COLUMNS = [
  ['id', 'text'],
  ['state', 'text'],
  ['ready_pos', 'integer'],
  ['ready_since', 'integer'],
] as const;

/** A member waiting in its group (R24), as `moveJobs` may let it go on and move it. */
interface WaitingRow {
  id: string;
  origin_queue: string | null;
  priority: number;
  grp: string;
  available_at: number;
  group_seq: number;
  seq: number;
}

const WAITING_COLUMNS = 'id, origin_queue, priority, grp, available_at, group_seq, seq';

/** Before every group sequence number. */
const BEFORE_ANY_SEQ = Number.MIN_SAFE_INTEGER;

/**
 * The waiting members of a queue's groups (R24) in group order, looked up ahead for one
 * `moveJobs` call: for the groups of a chunk at once, and again for a group whose members
 * looked up ran out. Only that call changes them meanwhile (each `next` is the one that goes on).
 */
class WaitingMembers {
  private readonly groups = new Map<
    string,
    { rows: WaitingRow[]; used: number; complete: boolean }
  >();

  constructor(
    private readonly c: SqlConnection,
    private readonly dialect: SqlDialect,
    private readonly queue: string,
  ) {}

  /**
   * Looks up the next waiting members of each group not known yet or whose members looked up
   * ran out: together up to about a chunk. `none`: the queue has no waiting job.
   */
  async lookUp(grps: readonly string[], none: boolean): Promise<void> {
    const wanted = grps.filter((grp) => {
      const known = this.groups.get(grp);
      return known === undefined || (known.used === known.rows.length && !known.complete);
    });
    if (wanted.length === 0) return;
    if (none) {
      for (const grp of wanted) this.groups.set(grp, { rows: [], used: 0, complete: true });
      return;
    }
    const limit = Math.max(1, Math.floor(MOVE_CHUNK / wanted.length));
    const after = wanted.map((grp) => ({ grp, after_seq: this.lastSeq(grp) }));
    let rows: WaitingRow[];
    if (this.dialect.setBased) {
      rows = await this.c.query<WaitingRow>(
        `SELECT w.* FROM ${this.dialect.jsonRecords(WAITING_AFTER_COLUMNS)} AS g
         CROSS JOIN LATERAL (${WAITING_SQL.replace('{grp}', 'g.grp').replace('{after}', 'g.after_seq')}) AS w`,
        [JSON.stringify(after), this.queue, limit],
      );
    } else {
      rows = [];
      for (const { grp, after_seq } of after) {
        rows.push(
          ...(await this.c.query<WaitingRow>(
            WAITING_SQL.replace('{grp}', '?').replace('{after}', '?'),
            [this.queue, grp, after_seq, limit],
          )),
        );
      }
    }
    const byGroup = new Map<string, WaitingRow[]>(wanted.map((grp) => [grp, []]));
    for (const row of rows) byGroup.get(row.grp)?.push(row);
    for (const [grp, found] of byGroup) {
      found.sort((a, b) => a.group_seq - b.group_seq);
      this.groups.set(grp, { rows: found, used: 0, complete: found.length < limit });
    }
  }

  /** The members looked up of these groups that have not gone on yet, in group order. */
  following(grps: readonly string[]): WaitingRow[] {
    return grps.flatMap((grp) => {
      const known = this.groups.get(grp);
      return known === undefined ? [] : known.rows.slice(known.used);
    });
  }

  /** The member of group `grp` that goes on now (looked up first if need be), if any. */
  async next(grp: string): Promise<WaitingRow | undefined> {
    let known = this.groups.get(grp);
    if (known === undefined || (known.used === known.rows.length && !known.complete)) {
      await this.lookUp([grp], false);
      known = this.groups.get(grp);
    }
    if (known === undefined || known.used === known.rows.length) return undefined;
    const row = known.rows[known.used] as WaitingRow;
    known.used += 1;
    return row;
  }

  private lastSeq(grp: string): number {
    const known = this.groups.get(grp);
    const last = known?.rows[known.rows.length - 1];
    return last === undefined ? BEFORE_ANY_SEQ : last.group_seq;
  }
}

const WAITING_SQL = `SELECT ${WAITING_COLUMNS} FROM leaseq_jobs
  WHERE queue = ? AND grp = {grp} AND state = 'waiting' AND group_seq > {after}
  ORDER BY group_seq LIMIT ?`;

const WAITING_AFTER_COLUMNS = [
  ['grp', 'text'],
  ['after_seq', 'integer'],
] as const;

function originOf(row: Pick<JobRowView, 'origin_queue' | 'origin_reason' | 'origin_at'>): {
  origin?: DeadLetterOrigin;
} {
  if (row.origin_queue === null) return {};
  return {
    origin: {
      queue: row.origin_queue,
      reason: row.origin_reason as string,
      at: Number(row.origin_at),
    },
  };
}

function decodeHistory(text: string | null): DeadLetter['history'] {
  return text === null ? [] : JSON.parse(text);
}

interface NewJobRow {
  id: string;
  payload: string | null;
  seq: number;
  state: 'ready' | 'delayed' | 'waiting';
  available_at: number;
  ready_pos: number | null;
  ready_since: number | null;
  published_at: number;
  priority: number;
  grp: string | null;
  group_seq: number | null;
  expires_at: number | null;
  expiry_at: number | null;
}

const NEW_JOB_COLUMNS = [
  ['id', 'text'],
  ['payload', 'text'],
  ['seq', 'integer'],
  ['state', 'text'],
  ['available_at', 'integer'],
  ['ready_pos', 'integer'],
  ['ready_since', 'integer'],
  ['published_at', 'integer'],
  ['priority', 'integer'],
  ['grp', 'text'],
  ['group_seq', 'integer'],
] as const;

/** R30: the expiry a job was published with, and the one in force. */
const EXPIRY_COLUMNS = [
  ['expires_at', 'integer'],
  ['expiry_at', 'integer'],
] as const;

/**
 * Ids of one publish call: which are taken (present or remembered), checked in one query, and
 * generated ids (`job-N`, as the core makes them) that skip taken ones and those the call gives.
 */
class IdAllocator {
  /** Taken ids, each with its group sequence number (R29; null without a group). */
  readonly taken = new Map<string, number | null>();
  private readonly checked = new Set<string>();
  private readonly candidates: string[] = [];
  /**
   * How many of `candidates` were handed out: an index, not a shift of the array, which copies
   * what is left each time (a publish of 50,000 generated ids took seconds in its transaction).
   */
  private used = 0;
  /** The ids the call gives: a job of it later in line would find a generated one taken. */
  private given: ReadonlySet<string> = new Set();

  constructor(
    private readonly ops: QueueOps,
    private readonly now: number,
  ) {}

  async check(explicit: readonly string[], inputs: readonly EncodedPublish[]): Promise<void> {
    const q = this.ops.q;
    if (!q.generatedFormSeen && explicit.some(hasGeneratedForm)) q.generatedFormSeen = true;
    const generated = inputs.filter((input) => input.id === undefined).length;
    for (let i = 0; i < generated; i++) this.candidates.push(this.ops.nextGeneratedId());
    // Generated ids can be taken only by an id of their form from elsewhere.
    const ids = q.generatedFormSeen ? [...explicit, ...this.candidates] : [...explicit];
    if (ids.length > 0) {
      for (const row of await this.ops.takenAmong(ids, this.now))
        this.taken.set(row.id, row.group_seq);
    }
    for (const id of ids) this.checked.add(id);
    if (generated > 0) this.given = new Set(explicit);
  }

  /** The next generated id where none can be taken (no look-up needed); else undefined. */
  next(): string | undefined {
    if (this.ops.q.generatedFormSeen) return undefined;
    return this.nextCandidate();
  }

  /** The next generated id that no job has, where `next` cannot tell (a look-up each). */
  async generate(): Promise<string> {
    for (;;) {
      const id = this.nextCandidate();
      if (!this.checked.has(id)) {
        this.checked.add(id);
        for (const row of await this.ops.takenAmong([id], this.now)) {
          this.taken.set(row.id, row.group_seq);
        }
      }
      if (!this.taken.has(id) && !this.given.has(id)) return id;
    }
  }

  /** The next of the ids `check` drew (and looked up where needed), then new ones. */
  private nextCandidate(): string {
    const id = this.candidates[this.used];
    if (id === undefined) return this.ops.nextGeneratedId();
    this.used += 1;
    return id;
  }
}
