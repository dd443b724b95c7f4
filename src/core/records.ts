import type { Fifo } from './fifo.js';
import type { HeapItem } from './heap.js';
import type { Attempt, JobState } from './types.js';

export type { JobState };

/** A job that still exists. Also its own node in the delayed heap. */
export interface JobRecord extends HeapItem {
  readonly id: string;
  readonly payload: unknown;
  /** Publish order, the tie-break among delayed jobs due at the same tick. */
  readonly seq: number;
  /** Its priority, group and expiry (R23, R24, R30); undefined for a job with none of them. */
  readonly traits: JobTraits | undefined;
  /** When it was published (kept across redelivery and redrive). */
  readonly publishedAt: number;
  state: JobState;
  deliveryCount: number;
  /**
   * Delayed or waiting: the tick its delay ends. Ready: the tick it became ready (the
   * oldest-ready-age gauge counts from it). One field for both, as a job is never both.
   */
  availableAt: number;
  delivery: DeliveryRecord | undefined;
  history: Attempt[] | undefined;
  deadReason: string | undefined;
  deadAt: number;
}

/**
 * What only a job published with a priority, a group or an expiry carries, so that a queue
 * using none of them pays one field per job for them.
 */
export interface JobTraits {
  /** 0..9, higher first (R23). */
  readonly priority: number;
  /** Its message group (R24), if any. */
  readonly group: string | undefined;
  /** Where it stands in its group: the seq it joined the group at (publish, or redrive). */
  groupSeq: number;
  /** The queue time it expires at while ready or delayed (R30), if it was published with one. */
  readonly expiresAt: number | undefined;
}

/**
 * A ready or delayed job that expires (R30), at `at`: the earlier of its own expiresAt and
 * publishedAt + the queue's retention. Its own node in the expiry heap.
 */
export interface ExpiryRecord extends HeapItem {
  readonly job: JobRecord;
  readonly at: number;
}

/**
 * A message group (R24) with members: at most one of them (the first joined) is ready,
 * delayed or active; the others wait in `waiting`, in the order they joined (made when the
 * first one waits: a group of one member, the usual case, carries none).
 */
export interface GroupRecord {
  members: number;
  waiting: Fifo<JobRecord> | undefined;
}

/** A live delivery. Also its own node in the deadline heap. */
export interface DeliveryRecord extends HeapItem {
  readonly token: number;
  readonly job: JobRecord;
  readonly deliveredAt: number;
  deadline: number;
  readonly session: SessionRecord | undefined;
  /** Set while the delivery can still trip its session's ack timeout. */
  ackTimer: AckTimer | undefined;
}

/** When a delivery trips its session's consumer timeout (R16). */
export interface AckTimer extends HeapItem {
  readonly at: number;
  readonly delivery: DeliveryRecord;
}

export interface SessionRecord extends HeapItem {
  readonly id: string;
  readonly prefetch: number;
  readonly timeout: number;
  readonly ackTimeout: number;
  lastHeartbeat: number;
  /** Live deliveries, in token order (insertion order is token order). */
  readonly deliveries: Map<number, DeliveryRecord>;
}

export const byAvailability = (a: JobRecord, b: JobRecord): boolean =>
  a.availableAt < b.availableAt || (a.availableAt === b.availableAt && a.seq < b.seq);

export const byDeadline = (a: DeliveryRecord, b: DeliveryRecord): boolean =>
  a.deadline < b.deadline || (a.deadline === b.deadline && a.token < b.token);

export const byAckTimer = (a: AckTimer, b: AckTimer): boolean =>
  a.at < b.at || (a.at === b.at && a.delivery.token < b.delivery.token);

/** Expiry order (R30): by time, then publish order. */
export const byExpiry = (a: ExpiryRecord, b: ExpiryRecord): boolean =>
  a.at < b.at || (a.at === b.at && a.job.seq < b.job.seq);

export const byHeartbeatEnd = (a: SessionRecord, b: SessionRecord): boolean =>
  a.lastHeartbeat + a.timeout < b.lastHeartbeat + b.timeout;

/**
 * History kept per job is bounded so a job retried forever cannot grow without limit: its first
 * attempt (when it was first tried, which SQS's ApproximateFirstReceiveTimestamp reports) and
 * its latest ones.
 */
export const MAX_HISTORY = 100;

/** `history` with `attempt` added, its first attempt and latest ones kept (MAX_HISTORY in all). */
export function withAttempt<A>(history: A[], attempt: A): A[] {
  history.push(attempt);
  if (history.length > MAX_HISTORY) history.splice(1, history.length - MAX_HISTORY);
  return history;
}

export function recordAttempt(job: JobRecord, attempt: Attempt): void {
  job.history = withAttempt(job.history ?? [], attempt);
}
