/** Options of one queue. Times are in ticks (the core is unit-agnostic; above it, ms). */
export interface QueueOptions {
  /** Lease length given to a reservation that names none. Positive integer. Default 30000. */
  visibility?: number;
  /** Most active deliveries of the whole queue at once. Positive integer or Infinity (default). */
  prefetch?: number;
  /** R13: a job whose deliveryCount reached this is dead-lettered instead of returning. Default 10. */
  maxDeliveries?: number;
  /** R10: a delivery's deadline never passes deliveredAt + maxLease. Default Infinity. */
  maxLease?: number;
  /** R4: how long an acked id is still refused as a duplicate. Default 0 (not remembered). */
  dedupWindow?: number;
  /**
   * R26: the queue a job that dies here moves to, as ready, in the same step. Default none;
   * `null` (to `updateQueue`) removes it. A chain of dead-letter queues may not loop.
   */
  deadLetterQueue?: string | null;
  /** R27: a paused queue hands out nothing; publishes, acks and time go on. Default false. */
  paused?: boolean;
  /**
   * R30: how long after its publish a job may still be ready or delayed; from
   * `publishedAt + retention` on it dies with reason `expired` (an active delivery is never
   * ended by it). Positive integer, in ticks (ms above the core). Default none: Infinity, or
   * `null` to `updateQueue`, removes it.
   */
  retention?: number | null;
  /**
   * R31: the most ready jobs a publish may leave the queue with; what a publish beyond it does
   * is `overflow`. Positive integer. Default none: Infinity, or `null` to `updateQueue`,
   * removes it.
   */
  maxLength?: number | null;
  /**
   * R31: `reject` (default): a publish beyond `maxLength` is refused with a QueueFullError and
   * stores nothing. `dead-letter-oldest`: it is taken, and the oldest ready jobs die with reason
   * `maxlen` to make room.
   */
  overflow?: Overflow;
}

/** What a publish beyond a queue's `maxLength` does (R31). */
export type Overflow = 'reject' | 'dead-letter-oldest';

/**
 * The names of the queue options that are absent from ResolvedQueueOptions until set: all other
 * options are always present there, with their defaults filled in.
 */
export type SparseOption = 'deadLetterQueue' | 'paused' | 'retention' | 'maxLength' | 'overflow';

/**
 * Options with defaults filled in. `deadLetterQueue`, `retention` and `maxLength` are present
 * only when set, `paused` only while the queue is paused and `overflow` only when it is not the
 * default: a queue that uses none of them looks as it always did.
 */
export type ResolvedQueueOptions = Required<Omit<QueueOptions, SparseOption>> & {
  /** R26: the queue this queue's dead jobs move to; present only when set. */
  deadLetterQueue?: string;
  /** R27: present only while the queue is paused. */
  paused?: true;
  /**
   * R30: how long a job may stay ready or delayed after its publish, ticks; present only when set.
   */
  retention?: number;
  /** R31: the most ready jobs a publish may leave; present only when set. */
  maxLength?: number;
  /** R31: present only when not the default `reject`. */
  overflow?: 'dead-letter-oldest';
};

/**
 * A job to publish: its id, payload, delay, priority, group and expiry. `P` is the payload's
 * type as the queue declares it (`Queue<P>`), unknown by default: checked by the compiler only.
 */
export interface PublishInput<P = unknown> {
  /** The job id: the name of the work. Generated when omitted. 1..256 characters (R18). */
  id?: string;
  /** Opaque JSON. */
  payload?: P;
  /** Ticks until the job becomes ready. Integer ≥ 0, default 0. */
  delay?: number;
  /**
   * 0 (the default, lowest) to 9 (highest): ready jobs of a higher priority are handed out
   * first; within a priority the order of R4, R9 and R12 holds (R23).
   */
  priority?: number;
  /**
   * The job's message group (R24): never active while another job of the group is, and the
   * jobs of a group are handed out in publish order. 1..256 characters (R18). Default none.
   */
  group?: string;
  /**
   * R30: the time at which the job dies with reason `expired` if it is still ready or delayed
   * then, on the queue's clock (the same numbers as `now`; above the core, the broker's clock:
   * epoch milliseconds with the system clock). Integer ≥ 0. Default none. It stays with the job
   * in this queue only: a job that moves to another queue (R26) leaves it behind.
   */
  expiresAt?: number;
}

/** What a publish answers for each job. */
export interface PublishResult {
  /** The job's id: the one given, or the one generated. */
  id: string;
  /** true when the id was already present (or remembered, R4): nothing changed. */
  duplicate: boolean;
  /**
   * R29: the job's group sequence number, when it has a group (R24): larger than that of every
   * job that joined a group of the queue before it. A duplicate answers the stored job's (an
   * acked one's while its id is remembered, R4).
   */
  groupSeq?: number;
}

/** What `reserve` takes (R6, R22). */
export interface ReserveOptions {
  /** At most this many deliveries. Positive integer, default 1. */
  max?: number;
  /** Lease length for these deliveries. Positive integer, default the queue's visibility. */
  visibility?: number;
  /** The session the deliveries belong to (R16). */
  session?: string;
  /**
   * `manual` (default): each delivery is live until acked, nacked or expired (at least once).
   * `auto` (R22): each job is removed as it is handed out, so a consumer that fails loses it
   * (at most once); no lease, no prefetch bound, and a later ack of its token is stale.
   */
  ack?: 'manual' | 'auto';
}

/**
 * One ownership interval of a job. `token` names the interval, `id` names the work. `P` is the
 * payload's type as the queue declares it: a claim of the caller's, not checked at receive.
 */
export interface Delivery<P = unknown> {
  /** The delivery's token: larger than every earlier token of the queue (R6, R7). */
  token: number;
  /** The job's id. */
  id: string;
  /** The job's payload, as published. */
  payload: P;
  /** When the lease ends, on the queue's clock: now + visibility (R6). */
  deadline: number;
  /** The job's deliveries so far, this one included (R6, R33). */
  deliveryCount: number;
  /** true when the job was delivered before: deliveryCount > 1. */
  redelivered: boolean;
  /** The job's message group (R24), when it has one. */
  group?: string;
}

/** What `nack` takes (R9, R33). */
export interface NackOptions {
  /** true (default): back to the front of ready (or delayed). false: dead-letter. */
  requeue?: boolean;
  /** With requeue: ticks before the job is ready again. Integer ≥ 0, default 0. */
  delay?: number;
  /** With requeue false: the dead-letter reason. Default 'rejected'. */
  reason?: string;
  /**
   * What went wrong in this attempt (a handler's error message), kept with the attempt in the
   * job's history (R9, R14), with or without requeue: 1 to 1024 characters. Needs an attempt:
   * refused with `attempted: false`. Default none.
   */
  error?: string;
  /**
   * false: the delivery was never worked on (a prefetched job given back unseen), so it is no
   * delivery of the job (R33): `deliveryCount` returns to what it was and no attempt is
   * recorded. Needs requeue. Default true.
   */
  attempted?: boolean;
}

/** What `openSession` takes (R16). Times in ticks (ms above the core). */
export interface SessionOptions {
  /** Most live deliveries of this session. Positive integer or Infinity (default). */
  prefetch?: number;
  /** Heartbeat timeout: the session ends at lastHeartbeat + timeout. Default none. */
  timeout?: number;
  /** Consumer timeout: the session ends when a live delivery is held this long. Default none. */
  ackTimeout?: number;
}

/** A queue's jobs by state, for tests and debugging (R3: taking it changes nothing). */
export interface InspectView {
  /** The queue's time (ms): the largest `now` it has accepted (R2). */
  queueTime: number;
  /** Ready ids, front first. */
  ready: string[];
  /** Delayed jobs in promotion order. */
  delayed: {
    /** The job's id. */
    id: string;
    /** When it becomes ready, on the queue's clock. */
    availableAt: number;
  }[];
  /** Active deliveries in token order. */
  active: {
    /** The delivery's token. */
    token: number;
    /** The job's id. */
    id: string;
    /** When its lease ends, on the queue's clock. */
    deadline: number;
    /** The job's deliveries so far, this one included. */
    deliveryCount: number;
    /** The session it belongs to (R16), if any. */
    session?: string;
  }[];
  /** Dead jobs in the order they died. */
  dead: {
    /** The job's id. */
    id: string;
    /** The reason it died with. */
    reason: string;
    /** Its deliveries when it died. */
    deliveryCount: number;
  }[];
  /** Grouped jobs waiting behind an earlier job of their group (R24), in group order; absent when none. */
  waiting?: string[];
}

/** What `inspect` takes. */
export interface InspectOptions {
  /** At most this many entries in each list (the first ones, in the list's order). Default all. */
  limit?: number;
}

/** A live delivery as inspection shows it: when it was made, until when, and for whom. */
export interface LiveDelivery {
  /** The delivery's token. */
  token: number;
  /** The job's id. */
  id: string;
  /** When it was made, on the queue's clock. */
  deliveredAt: number;
  /** When its lease ends, on the queue's clock. */
  deadline: number;
  /** The job's deliveries so far, this one included. */
  deliveryCount: number;
  /** The session it belongs to (R16), if any. */
  session?: string;
}

/** What `deliveryPage` takes. */
export interface DeliveryPageOptions {
  /** At most this many live deliveries, 1 to 1000. Default 100. */
  limit?: number;
  /** The `next` of the page before: only the live deliveries with a larger token. */
  after?: string;
}

/** A page of a queue's live deliveries, in token order. */
export interface DeliveryPage {
  /** The live deliveries, in token order (the oldest first). */
  deliveries: LiveDelivery[];
  /** Where the next page starts (give it as `after`); absent when no live delivery follows. */
  next?: string;
}

/** How one delivery ended. */
export type AttemptOutcome =
  | 'acked'
  | 'requeued'
  | 'rejected'
  | 'expired'
  | 'session-ended'
  | 'cancelled';

/** One delivery of a job that did not end in an ack, in the job's history (R14). */
export interface Attempt {
  /** The delivery's token. */
  token: number;
  /** When it was made, on the queue's clock. */
  deliveredAt: number;
  /** When it ended, on the queue's clock. */
  endedAt: number;
  /** How it ended. */
  outcome: AttemptOutcome;
  /** The dead-letter reason of a nack with requeue false (`rejected` unless given). */
  reason?: string;
  /** What went wrong in this attempt, as its nack said (R9): a worker's handler error. */
  error?: string;
}

/** Where a job that arrived through dead-lettering died (R26). */
export interface DeadLetterOrigin {
  /** The queue it died in. */
  queue: string;
  /** The reason it died with there. */
  reason: string;
  /** When it died there (that queue's time). */
  at: number;
}

/**
 * A dead job (R14): its payload, why and when it died, and its history. `P` is the payload's
 * type as the queue declares it (see Delivery).
 */
export interface DeadLetter<P = unknown> {
  /** The job's id. */
  id: string;
  /** Undefined when the job has none; absent from a page read with `payloads: false`. */
  payload?: P;
  /** The reason it died with: `max-deliveries`, `cancelled`, `expired`, a nack's reason … */
  reason: string;
  /** Its deliveries when it died. */
  deliveryCount: number;
  /** When it died, on the queue's clock. */
  deadAt: number;
  /**
   * Its deliveries that did not end in an ack, oldest first (at most 100: the first and the latest
   * 99).
   */
  history: Attempt[];
  /** Set when the job came to this queue by dead-lettering (R26). */
  origin?: DeadLetterOrigin;
}

/** What `deadLetterPage` takes. */
export interface DeadLetterPageOptions {
  /**
   * At most this many dead letters, 1 to 1000. Default 100. With payloads, fewer where their
   * JSON text reaches DEAD_LETTER_PAGE_CHARS (8 Mi characters) first: follow `next`.
   */
  limit?: number;
  /** The `next` of the page before: only the dead letters that died after that page's. */
  after?: string;
  /**
   * false: the dead letters come without their `payload`, and none is asked of the storage (a
   * page of large payloads is megabytes; `job(id)` reads one job's). Otherwise the same jobs,
   * but for a page that payloads end early (see `limit`). Default true.
   */
  payloads?: boolean;
}

/** A page of a queue's dead letters, in the order they died; `P` as in DeadLetter. */
export interface DeadLetterPage<P = unknown> {
  /** The dead letters, in the order they died. */
  deadLetters: DeadLetter<P>[];
  /** Where the next page starts (give it as `after`); absent when no dead letter follows. */
  next?: string;
}

/** What `moveJobs` takes (R26). */
export interface MoveJobsOptions {
  /** Only these ids, in this order; default every ready and delayed job (in ready order, then delayed). */
  ids?: readonly string[];
  /** The queue to move to; default each job's origin queue (jobs without one stay). */
  to?: string;
  /**
   * Only jobs that died in one of these queues (their origin); default any job, with an origin
   * or not. Jobs without an origin never match.
   */
  origins?: readonly string[];
  /** At most this many. Positive integer; default no bound. */
  max?: number;
}

/** A queue's gauges (now) and counters (R17). Times on the queue's clock. */
export interface QueueStats {
  /** The queue's time (ms) these figures were taken at. */
  queueTime: number;
  /** Jobs ready now. */
  ready: number;
  /** Jobs delayed (published or nacked with a delay) now. */
  delayed: number;
  /** Live deliveries now. */
  active: number;
  /** Dead jobs now. */
  dead: number;
  /** Grouped jobs waiting behind an earlier job of their group (R24). */
  waiting: number;
  /** Open sessions now. */
  sessions: number;
  /** R27: whether the queue is paused (hands out nothing). */
  paused: boolean;
  /**
   * now minus the time the longest-waiting ready job became ready; 0 when none, and never below
   * 0 (a job that arrived from a queue whose clock was ahead, R26, became ready after now).
   */
  oldestReadyAge: number;
  /** Jobs published (duplicates not counted). */
  published: number;
  /** Publishes of an id present or remembered (R4), answered `duplicate: true`. */
  duplicates: number;
  /**
   * R31: jobs of publishes refused whole with a QueueFullError (the queue at its `maxLength`,
   * overflow `reject`), none of them stored. Each refused call counts its jobs.
   */
  refused: number;
  /** Deliveries made, the auto-ack hand-outs (`autoAcked`) included. */
  deliveries: number;
  /** Deliveries of a job delivered before (deliveryCount > 1). */
  redeliveries: number;
  /** Acks of live deliveries. */
  acks: number;
  /** Nacks of live deliveries (requeued or rejected). */
  nacks: number;
  /**
   * R33: nacks that gave a delivery back unworked (counted in `nacks` too). Many of them say
   * that consumers take more than they work on: a prefetch above what they use.
   */
  unworked: number;
  /** Leases that ran out at their deadline (R3b). */
  expiries: number;
  /** Live deliveries released because their session ended (R16). */
  sessionReleases: number;
  /** Successful lease extensions (R10). */
  extensions: number;
  /** Acks of a token that named no live delivery (answered false). */
  staleAcks: number;
  /** Nacks of a token that named no live delivery (answered false). */
  staleNacks: number;
  /** Extensions of a token that named no live delivery (answered null). */
  staleExtends: number;
  /** Dead jobs redriven to ready (R14). */
  redriven: number;
  /** Jobs removed by purge and purgeQueue (R19). */
  purged: number;
  /** Jobs handed out by an auto-ack reserve (R22), removed as they were handed out. */
  autoAcked: number;
  /** R28: jobs cancelled by id (dead with reason `cancelled`, or removed). */
  cancelled: number;
  /**
   * R30: ready or delayed jobs that died of expiry (retention or expiresAt). Not the leases
   * that ran out: those are `expiries`.
   */
  expired: number;
  /** Jobs dead-lettered, by reason kind (R17: `max-deliveries`, `rejected` …). */
  deadLetters: Record<string, number>;
  /** Delivery-to-ack times of acked deliveries. */
  processingTime: {
    /** Acked deliveries timed. */
    count: number;
    /** Their times added up, ticks (ms above the core). */
    sum: number;
    /** The longest, ticks (ms above the core); 0 when none. */
    max: number;
  };
}

/** The states of a job that still exists (an acked job no longer does). */
export type JobState = 'ready' | 'delayed' | 'active' | 'dead' | 'waiting';

/** One job by id, with its attempt history; `P` is the payload's type (see Delivery). */
export interface JobView<P = unknown> {
  /** The job's id. */
  id: string;
  /** The job's payload, as published. */
  payload: P;
  /** The state it is in. */
  state: JobState;
  /** Its deliveries so far. */
  deliveryCount: number;
  /** When the job was published. Absent for jobs stored before publish times were kept. */
  publishedAt?: number;
  /** Its priority (R23), when above the default 0. */
  priority?: number;
  /** Its message group (R24), when it has one. */
  group?: string;
  /** Its group sequence number (R29), when it has a group. */
  groupSeq?: number;
  /** R30: the expiry it was published with, when it has one. */
  expiresAt?: number;
  /** When a delayed job becomes ready; present only while it is delayed. */
  availableAt?: number;
  /** The token of its live delivery; present only while it is active. */
  token?: number;
  /** When its live delivery's lease ends; present only while it is active. */
  deadline?: number;
  /** Why it died; present only while it is dead. */
  reason?: string;
  /** When it died; present only while it is dead. */
  deadAt?: number;
  /** Its deliveries that did not end in an ack, oldest first (R14). */
  history: Attempt[];
  /** Set when the job came to this queue by dead-lettering (R26). */
  origin?: DeadLetterOrigin;
}
