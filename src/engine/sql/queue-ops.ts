import { copyCounters } from '../../core/counters.js';
import {
  type DeadLetter,
  type Delivery,
  type InspectView,
  type JobView,
  type PublishResult,
  type QueueStats,
  SessionClosedError,
  ValidationError,
} from '../../core/index.js';
import type { ResolvedNack, ResolvedSession } from '../../core/validate.js';
import { attemptOf, DELIVERY_COLUMNS, type DeliveryRow, JobMoves } from './job-moves.js';
import { INFINITY_AS_NULL } from './queue-row.js';

const SESSION_ID = /^s([1-9][0-9]*)$/;

/** A publish whose arguments were checked and whose payload is already JSON text. */
export interface EncodedPublish {
  id: string | undefined;
  payloadJson: string | null;
  delay: number;
}

export interface ReserveArgs {
  max: number;
  visibility: number | undefined;
  session: string | undefined;
}

/** The operations of SPEC.md over SQL rows; arguments are validated by the caller. */
export class QueueOps extends JobMoves {
  async publish(now: number, inputs: readonly EncodedPublish[]): Promise<PublishResult[]> {
    await this.advance(now);
    const results: PublishResult[] = [];
    for (const input of inputs) results.push(await this.insert(now, input));
    return results;
  }

  async reserve(now: number, args: ReserveArgs): Promise<Delivery[]> {
    if (args.session !== undefined) this.checkSessionKnown(args.session);
    await this.advance(now);
    let count = Math.min(args.max, this.q.options.prefetch - this.q.active, this.q.ready);
    let ackTimeout: number | null = null;
    if (args.session !== undefined) {
      const session = await this.openSession(args.session);
      ackTimeout = session.ack_timeout;
      if (session.prefetch !== null) {
        const [held] = await this.c.query<{ n: number }>(
          `SELECT COUNT(*) AS n FROM leaseq_jobs WHERE queue = ? AND state = 'active' AND session = ?`,
          [this.q.name, args.session],
        );
        count = Math.min(count, session.prefetch - (held?.n ?? 0));
      }
    }
    if (count <= 0) return [];
    const visibility = args.visibility ?? this.q.options.visibility;
    const deadline = now + Math.min(visibility, this.q.options.maxLease);
    const rows = await this.c.query<{ id: string; payload: string | null; delivery_count: number }>(
      `SELECT id, payload, delivery_count FROM leaseq_jobs WHERE queue = ? AND state = 'ready'
       ORDER BY ready_pos LIMIT ?`,
      [this.q.name, count],
    );
    const deliveries: Delivery[] = [];
    for (const row of rows) {
      const token = this.q.nextToken++;
      const deliveryCount = row.delivery_count + 1;
      await this.c.run(
        `UPDATE leaseq_jobs SET state = 'active', ready_pos = NULL, token = ?, delivered_at = ?,
           deadline = ?, session = ?, delivery_count = ?
         WHERE queue = ? AND id = ?`,
        [token, now, deadline, args.session ?? null, deliveryCount, this.q.name, row.id],
      );
      this.q.counters.deliveries += 1;
      if (deliveryCount > 1) this.q.counters.redeliveries += 1;
      deliveries.push({
        token,
        id: row.id,
        payload: decodePayload(row.payload),
        deadline,
        deliveryCount,
        redelivered: deliveryCount > 1,
      });
    }
    this.q.ready -= rows.length;
    this.q.active += rows.length;
    let nextEvent = deadline;
    if (ackTimeout !== null && now + ackTimeout < deadline) nextEvent = now + ackTimeout;
    if (rows.length > 0) this.q.nextEventAt = Math.min(this.q.nextEventAt, nextEvent);
    return deliveries;
  }

  async ack(now: number, tokens: readonly number[]): Promise<boolean[]> {
    await this.advance(now);
    const results: boolean[] = [];
    for (const token of tokens) results.push(await this.ackOne(now, token));
    return results;
  }

  async nack(now: number, token: number, nack: ResolvedNack): Promise<boolean> {
    await this.advance(now);
    const row = await this.liveDelivery(token);
    if (row === undefined) {
      this.q.counters.staleNacks += 1;
      return false;
    }
    await this.settleNacks([row], now, nack);
    return true;
  }

  async extend(now: number, token: number, visibility: number): Promise<number | null> {
    await this.advance(now);
    const row = await this.liveDelivery(token);
    if (row === undefined) {
      this.q.counters.staleExtends += 1;
      return null;
    }
    const deadline = Math.min(now + visibility, row.delivered_at + this.q.options.maxLease);
    await this.c.run('UPDATE leaseq_jobs SET deadline = ? WHERE queue = ? AND token = ?', [
      deadline,
      this.q.name,
      token,
    ]);
    // A shorter lease, or an ack timeout that can now trip, may come sooner than we thought.
    this.q.nextEventAt = Math.min(this.q.nextEventAt, deadline);
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

  async openSessionAt(now: number, options: ResolvedSession): Promise<string> {
    await this.advance(now);
    const id = `s${this.q.nextSession++}`;
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
    this.checkSessionKnown(sessionId);
    await this.advance(now);
    await this.openSession(sessionId);
    await this.c.run('UPDATE leaseq_sessions SET last_heartbeat = ? WHERE queue = ? AND id = ?', [
      now,
      this.q.name,
      sessionId,
    ]);
  }

  async closeSession(now: number, sessionId: string): Promise<number> {
    this.checkSessionKnown(sessionId);
    await this.advance(now);
    await this.openSession(sessionId);
    const released = await this.endSession(sessionId, now);
    await this.release(released, now);
    return released.length;
  }

  /** R11: every live delivery of the session with a token ≤ `token`, in token order. */
  async upTo(now: number, sessionId: string, token: number): Promise<DeliveryRow[]> {
    this.checkSessionKnown(sessionId);
    await this.advance(now);
    await this.openSession(sessionId);
    return this.c.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs
       WHERE queue = ? AND state = 'active' AND session = ? AND token <= ? ORDER BY token`,
      [this.q.name, sessionId, token],
    );
  }

  async ackRows(now: number, rows: readonly DeliveryRow[]): Promise<number> {
    for (const row of rows) await this.ackOne(now, row.token);
    return rows.length;
  }

  /** Nacks live deliveries given in token order, as one step. */
  async settleNacks(
    rows: readonly DeliveryRow[],
    now: number,
    nack: ResolvedNack,
  ): Promise<number> {
    const outcome = nack.requeue ? 'requeued' : 'rejected';
    const reason = nack.requeue ? undefined : nack.reason;
    const ended = rows.map((row) => ({ row, attempt: attemptOf(row, now, outcome, reason) }));
    this.q.counters.nacks += rows.length;
    if (nack.requeue) await this.requeue(ended, now, nack.delay);
    else
      for (const { row, attempt } of ended) await this.deadLetter(row, attempt, now, nack.reason);
    return rows.length;
  }

  async redrive(now: number, ids: readonly string[] | undefined): Promise<number> {
    await this.advance(now);
    let moved = 0;
    for (const id of await this.deadIds(ids)) {
      this.q.readyTail += 1;
      moved += await this.c.run(
        `UPDATE leaseq_jobs SET state = 'ready', delivery_count = 0, dead_reason = NULL,
           dead_at = NULL, dead_seq = NULL, ready_pos = ?, ready_since = ?
         WHERE queue = ? AND id = ? AND state = 'dead'`,
        [this.q.readyTail, now, this.q.name, id],
      );
    }
    this.q.dead -= moved;
    this.q.ready += moved;
    this.q.counters.redriven += moved;
    return moved;
  }

  async purge(now: number, ids: readonly string[] | undefined): Promise<number> {
    await this.advance(now);
    let purged = 0;
    for (const id of await this.deadIds(ids)) {
      purged += await this.c.run(
        `DELETE FROM leaseq_jobs WHERE queue = ? AND id = ? AND state = 'dead'`,
        [this.q.name, id],
      );
    }
    this.q.dead -= purged;
    this.q.counters.purged += purged;
    return purged;
  }

  async stats(now: number): Promise<QueueStats> {
    await this.advance(now);
    const [oldest] = await this.c.query<{ since: number | null }>(
      `SELECT MIN(ready_since) AS since FROM leaseq_jobs WHERE queue = ? AND state = 'ready'`,
      [this.q.name],
    );
    return {
      clock: this.q.clock,
      ready: this.q.ready,
      delayed: this.q.delayed,
      active: this.q.active,
      dead: this.q.dead,
      sessions: this.q.sessions,
      oldestReadyAge: oldest?.since == null ? 0 : now - oldest.since,
      ...copyCounters(this.q.counters),
    };
  }

  // --- inspection (takes no time) -------------------------------------------------------------

  async inspect(): Promise<InspectView> {
    const name = this.q.name;
    const ready = await this.c.query<{ id: string }>(
      `SELECT id FROM leaseq_jobs WHERE queue = ? AND state = 'ready' ORDER BY ready_pos`,
      [name],
    );
    const delayed = await this.c.query<{ id: string; available_at: number }>(
      `SELECT id, available_at FROM leaseq_jobs WHERE queue = ? AND state = 'delayed'
       ORDER BY available_at, seq`,
      [name],
    );
    const active = await this.c.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'active' ORDER BY token`,
      [name],
    );
    const dead = await this.c.query<{ id: string; dead_reason: string; delivery_count: number }>(
      `SELECT id, dead_reason, delivery_count FROM leaseq_jobs WHERE queue = ? AND state = 'dead'
       ORDER BY dead_seq`,
      [name],
    );
    return {
      clock: this.q.clock,
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
    };
  }

  async deadLetters(): Promise<DeadLetter[]> {
    const rows = await this.c.query<JobRowView>(
      `SELECT ${JOB_VIEW_COLUMNS} FROM leaseq_jobs WHERE queue = ? AND state = 'dead' ORDER BY dead_seq`,
      [this.q.name],
    );
    return rows.map((row) => ({
      id: row.id,
      payload: decodePayload(row.payload),
      reason: row.dead_reason as string,
      deliveryCount: row.delivery_count,
      deadAt: row.dead_at as number,
      history: decodeHistory(row.history),
    }));
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
      ...(row.state === 'delayed' ? { availableAt: row.available_at } : {}),
      ...(row.token === null ? {} : { token: row.token, deadline: row.deadline as number }),
      ...(row.state === 'dead'
        ? { reason: row.dead_reason as string, deadAt: row.dead_at as number }
        : {}),
      history: decodeHistory(row.history),
    };
  }

  // --- helpers --------------------------------------------------------------------------------

  private async insert(now: number, input: EncodedPublish): Promise<PublishResult> {
    const id = input.id ?? (await this.generateId(now));
    if (await this.isPresentOrRemembered(id, now)) {
      this.q.counters.duplicates += 1;
      return { id, duplicate: true };
    }
    const seq = this.q.nextSeq++;
    if (input.delay > 0) {
      await this.c.run(
        `INSERT INTO leaseq_jobs (queue, id, payload, seq, state, delivery_count, available_at)
         VALUES (?, ?, ?, ?, 'delayed', 0, ?)`,
        [this.q.name, id, input.payloadJson, seq, now + input.delay],
      );
      this.q.delayed += 1;
      this.q.nextEventAt = Math.min(this.q.nextEventAt, now + input.delay);
    } else {
      this.q.readyTail += 1;
      await this.c.run(
        `INSERT INTO leaseq_jobs (queue, id, payload, seq, state, delivery_count, available_at,
           ready_pos, ready_since)
         VALUES (?, ?, ?, ?, 'ready', 0, ?, ?, ?)`,
        [this.q.name, id, input.payloadJson, seq, now, this.q.readyTail, now],
      );
      this.q.ready += 1;
    }
    this.q.counters.published += 1;
    return { id, duplicate: false };
  }

  private async isPresentOrRemembered(id: string, now: number): Promise<boolean> {
    const [present] = await this.c.query<{ one: number }>(
      `SELECT 1 AS one FROM leaseq_jobs WHERE queue = ? AND id = ?
       UNION ALL SELECT 1 AS one FROM leaseq_acked WHERE queue = ? AND id = ? AND forget_at > ?`,
      [this.q.name, id, this.q.name, id, now],
    );
    return present !== undefined;
  }

  private async generateId(now: number): Promise<string> {
    for (;;) {
      const id = `job-${this.q.nextGeneratedId++}`;
      if (!(await this.isPresentOrRemembered(id, now))) return id;
    }
  }

  private async ackOne(now: number, token: number): Promise<boolean> {
    const row = await this.liveDelivery(token);
    if (row === undefined) {
      this.q.counters.staleAcks += 1;
      return false;
    }
    await this.c.run('DELETE FROM leaseq_jobs WHERE queue = ? AND id = ?', [this.q.name, row.id]);
    const window = this.q.options.dedupWindow;
    if (window > 0) {
      await this.c.run(
        `INSERT INTO leaseq_acked (queue, id, forget_at) VALUES (?, ?, ?)
         ON CONFLICT (queue, id) DO UPDATE SET forget_at = excluded.forget_at`,
        [this.q.name, row.id, now + window],
      );
    }
    this.q.active -= 1;
    const elapsed = now - row.delivered_at;
    const timing = this.q.counters.processingTime;
    timing.count += 1;
    timing.sum += elapsed;
    if (elapsed > timing.max) timing.max = elapsed;
    this.q.counters.acks += 1;
    return true;
  }

  private async deadIds(ids: readonly string[] | undefined): Promise<string[]> {
    if (ids !== undefined) return [...ids];
    const rows = await this.c.query<{ id: string }>(
      `SELECT id FROM leaseq_jobs WHERE queue = ? AND state = 'dead' ORDER BY dead_seq`,
      [this.q.name],
    );
    return rows.map((row) => row.id);
  }

  /** A session id this queue never issued is a bad argument, checked before R3. */
  private checkSessionKnown(sessionId: unknown): void {
    const match = typeof sessionId === 'string' ? SESSION_ID.exec(sessionId) : null;
    if (match === null || Number(match[1]) >= this.q.nextSession) {
      throw new ValidationError(`unknown session ${JSON.stringify(sessionId)}`);
    }
  }

  /** After R3: the session must still be open. */
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

interface JobRowView {
  id: string;
  payload: string | null;
  state: 'ready' | 'delayed' | 'active' | 'dead';
  delivery_count: number;
  available_at: number;
  token: number | null;
  deadline: number | null;
  dead_reason: string | null;
  dead_at: number | null;
  history: string | null;
}

const JOB_VIEW_COLUMNS =
  'id, payload, state, delivery_count, available_at, token, deadline, dead_reason, dead_at, history';

export function decodePayload(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}

function decodeHistory(text: string | null): DeadLetter['history'] {
  return text === null ? [] : JSON.parse(text);
}

export function encodePayload(payload: unknown, at: string): string | null {
  if (payload === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw new ValidationError(`${at}.payload is not JSON: ${(error as Error).message}`);
  }
  if (text === undefined) throw new ValidationError(`${at}.payload is not JSON`);
  return text;
}
