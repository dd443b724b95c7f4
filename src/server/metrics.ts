import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DEAD_LETTER_KINDS, type JobState, type QueueStats } from '../core/index.js';
import type { StatNumber } from './schemas.js';

/** Where each R17 number of `QueueStats` goes in Prometheus. Every queue is a `queue` label. */
const COUNTERS: Record<
  Exclude<StatNumber, 'queueTime' | JobState | 'sessions' | 'oldestReadyAge'>,
  [string, string]
> = {
  published: ['leaseq_published_total', 'Jobs published (duplicates not counted)'],
  duplicates: ['leaseq_duplicate_publishes_total', 'Publishes refused as duplicates (R4)'],
  refused: [
    'leaseq_refused_publishes_total',
    'Jobs of publishes refused whole with QUEUE_FULL: the queue was at its maxLength (R31)',
  ],
  deliveries: ['leaseq_deliveries_total', 'Deliveries made (R6)'],
  redeliveries: ['leaseq_redeliveries_total', 'Deliveries of a job delivered before'],
  acks: ['leaseq_acks_total', 'Deliveries completed by ack (R8)'],
  nacks: ['leaseq_nacks_total', 'Deliveries given back by nack (R9)'],
  unworked: [
    'leaseq_unworked_total',
    'Nacks that gave a delivery back unworked, not counted as a delivery of its job (R33)',
  ],
  expiries: ['leaseq_expiries_total', 'Deliveries whose lease ran out (R12)'],
  sessionReleases: ['leaseq_session_releases_total', 'Deliveries released by a session end (R16)'],
  extensions: ['leaseq_extensions_total', 'Successful lease extensions (R10)'],
  staleAcks: ['leaseq_stale_acks_total', 'Acks that named no live delivery (false, R8)'],
  staleNacks: ['leaseq_stale_nacks_total', 'Nacks that named no live delivery (false, R9)'],
  staleExtends: ['leaseq_stale_extends_total', 'Extends that named no live delivery (null, R10)'],
  redriven: ['leaseq_redriven_total', 'Dead jobs moved back to ready (R14)'],
  purged: [
    'leaseq_purged_total',
    'Jobs removed for good: dead ones by purge, and every job a purgeQueue removed (R19)',
  ],
  autoAcked: [
    'leaseq_auto_acked_total',
    'Jobs removed as they were handed out by an auto-ack receive (R22, at most once)',
  ],
  cancelled: ['leaseq_cancelled_total', 'Jobs cancelled by id (R28), dead or removed'],
  expired: [
    'leaseq_expired_jobs_total',
    'Ready or delayed jobs that died of expiry: retention or expiresAt (R30)',
  ],
};

/**
 * Queue counters are totals kept in the storage, not counts of this process: every server over
 * one storage shows the same values (aggregate with max, not sum), and they survive restarts
 * where the storage does (not `memory:`, which starts from zero).
 */
const FROM_STORAGE =
  '; read from the storage at scrape: the same on every server sharing it, kept across restarts on SQLite and PostgreSQL';

const JOB_STATES: readonly JobState[] = ['ready', 'delayed', 'active', 'dead', 'waiting'];

/** Writes one series of a queue: the labels after `queue` (`,state="ready"` or empty), the value. */
type Emit = (moreLabels: string, value: number) => void;

/** A Prometheus family of queue figures, written straight from each queue's stats. */
interface QueueFamily {
  readonly name: string;
  readonly type: 'gauge' | 'counter';
  readonly help: string;
  series(stats: QueueStats, emit: Emit): void;
}

function gauge(name: string, help: string, value: (stats: QueueStats) => number): QueueFamily {
  return { name, type: 'gauge', help, series: (stats, emit) => emit('', value(stats)) };
}

/** A queue counter: its help says where the value comes from (FROM_STORAGE). */
function counter(name: string, help: string, value: (stats: QueueStats) => number): QueueFamily {
  return {
    name,
    type: 'counter',
    help: `${help}${FROM_STORAGE}`,
    series: (stats, emit) => emit('', value(stats)),
  };
}

const QUEUE_FAMILIES: readonly QueueFamily[] = [
  {
    name: 'leaseq_jobs',
    type: 'gauge',
    help: 'Jobs by state (R17)',
    series(stats, emit) {
      for (const state of JOB_STATES) emit(`,state="${state}"`, stats[state]);
    },
  },
  gauge('leaseq_sessions', 'Open sessions', (stats) => stats.sessions),
  gauge(
    'leaseq_queue_paused',
    'Whether the queue is paused (R27): 1 hands out nothing, 0 runs',
    (stats) => (stats.paused ? 1 : 0),
  ),
  gauge(
    'leaseq_oldest_ready_age_seconds',
    'Age of the longest-waiting ready job',
    (stats) => stats.oldestReadyAge / 1000,
  ),
  ...Object.entries(COUNTERS).map(([field, [name, help]]) =>
    counter(name, help, (stats) => stats[field as keyof typeof COUNTERS]),
  ),
  {
    name: 'leaseq_dead_letters_total',
    type: 'counter',
    help: `Jobs dead-lettered, by reason kind (R17: max-deliveries, rejected, retries-exhausted, ambiguous, permanent, cancelled, expired, maxlen)${FROM_STORAGE}`,
    series(stats, emit) {
      // Every kind, at 0 until its first: a series that first appears at 1 has no earlier
      // sample, and increase() would never see a queue's first dead letter of a kind. (Stats
      // hold kinds alone: counts of older reasons are folded into theirs.)
      for (const reason of DEAD_LETTER_KINDS) {
        emit(`,reason="${reason}"`, stats.deadLetters[reason] ?? 0);
      }
    },
  },
  counter(
    'leaseq_processed_total',
    'Acked deliveries whose processing time is counted',
    (stats) => stats.processingTime.count,
  ),
  counter(
    'leaseq_processing_seconds_total',
    'Total time from delivery to ack of acked deliveries',
    (stats) => stats.processingTime.sum / 1000,
  ),
  gauge(
    'leaseq_processing_max_seconds',
    'Longest time from delivery to ack of one delivery',
    (stats) => stats.processingTime.max / 1000,
  ),
];

/** Queues of one family written before the event loop is let go (about a millisecond's work). */
const WRITTEN_BEFORE_YIELD = 1000;

/**
 * The queue families in the text format, as pieces of WRITTEN_BEFORE_YIELD queues (their
 * concatenation is the text), the event loop let go after each: at thousands of queues a scrape
 * writes megabytes, and every other request of the server would otherwise wait for all of it
 * (5,000 queues: half a second through prom-client's objects).
 */
async function writeQueueFigures(all: readonly [string, QueueStats][]): Promise<string[]> {
  const queueLabels = all.map(([queue]) => `queue="${escapeLabelValue(queue)}"`);
  const pieces: string[] = [];
  for (const family of QUEUE_FAMILIES) {
    // A blank line between two families; a piece goes on from the line before it.
    let lines = [
      `${pieces.length > 0 ? '\n\n' : ''}# HELP ${family.name} ${escapeText(family.help)}`,
      `# TYPE ${family.name} ${family.type}`,
    ];
    let start = '';
    const emit: Emit = (moreLabels, value) => {
      lines.push(`${start}${moreLabels}} ${formatValue(value)}`);
    };
    for (let index = 0; index < all.length; index += 1) {
      start = `${family.name}{${queueLabels[index]}`;
      family.series((all[index] as [string, QueueStats])[1], emit);
      if (index % WRITTEN_BEFORE_YIELD === WRITTEN_BEFORE_YIELD - 1) {
        pieces.push(lines.join('\n'));
        lines = [''];
        await setImmediatePromise();
      }
    }
    if (lines.length > 1 || lines[0] !== '') pieces.push(lines.join('\n'));
  }
  return pieces;
}

/** The text format's escapes (prom-client's, so both halves of a scrape read alike). */
function escapeText(text: string): string {
  return /[\\\n]/.test(text) ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : text;
}

function escapeLabelValue(text: string): string {
  return /[\\\n"]/.test(text) ? escapeText(text).replace(/"/g, '\\"') : text;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'Nan';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return `${value}`;
}

/** The `status` label of a request that was never answered whole. */
const ABORTED = 'aborted';

/**
 * Prometheus metrics of one server: HTTP and stream traffic of this process (prom-client), and
 * every queue's R17 numbers read at scrape and written straight out.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'leaseq_http_requests_total',
    help: 'HTTP requests, by route template and status (aborted: the connection closed before the answer was sent whole)',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'leaseq_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (long polls included), by route template',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
    registers: [this.registry],
  });
  /** The stream (docs/stream.md): connections, frames, operations and pushed deliveries. */
  readonly stream = new StreamMetrics(this.registry);

  get contentType(): string {
    return this.registry.contentType;
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.latency.observe({ method, route }, seconds);
  }

  /**
   * A request whose connection closed before its answer was sent whole (the client went away):
   * counted with status `aborted`, and not timed, as it was never answered.
   */
  requestAborted(method: string, route: string): void {
    this.requests.inc({ method, route, status: ABORTED });
  }

  /** The exposition text, with queue figures from `readStats` (one snapshot per queue). */
  async render(readStats: () => Promise<[string, QueueStats][]>): Promise<string> {
    return (await this.renderPieces(readStats)).join('');
  }

  /**
   * `render`'s text in pieces of at most a thousand queues of one family each, to be sent one
   * after the other: the text of thousands of queues joined (and then encoded, or gzipped, at
   * once) held the event loop for hundreds of milliseconds (10,000 queues: 18 MB).
   */
  async renderPieces(readStats: () => Promise<[string, QueueStats][]>): Promise<string[]> {
    const queues = await writeQueueFigures(await readStats());
    return [await this.registry.metrics(), '\n', ...queues, '\n'];
  }
}

/** Why a stream connection ended, as the `reason` label of its counter. */
const STREAM_END_REASONS = ['client', 'heartbeat-timeout', 'slow-consumer', 'shutdown'] as const;
export type StreamEndReason = (typeof STREAM_END_REASONS)[number];

/** The `type` label of received frames: each client frame's, and `invalid` for unreadable ones. */
const FRAME_TYPES = ['batch', 'subscribe', 'credit', 'unsubscribe', 'invalid'] as const;
export type FrameType = (typeof FRAME_TYPES)[number];

/**
 * The stream's traffic in this process (not from the storage: sum over servers). Cheap enough
 * for the hot path: a frame or a push costs one counter increment.
 */
export class StreamMetrics {
  private readonly open: Gauge;
  private readonly opened: Counter;
  private readonly ended: Counter<'reason'>;
  private readonly refusedUpgrades: Counter<'code'>;
  private readonly frames: Counter<'type'>;
  private readonly operations: Counter<'type' | 'outcome'>;
  private readonly subscriptionsGauge: Gauge;
  private readonly pushed: Counter;
  private readonly pushFrames: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.open = new Gauge({
      name: 'leaseq_stream_connections',
      help: 'Stream connections open now',
      registers,
    });
    this.opened = new Counter({
      name: 'leaseq_stream_connections_opened_total',
      help: 'Stream connections accepted',
      registers,
    });
    this.ended = new Counter({
      name: 'leaseq_stream_connections_closed_total',
      help: 'Stream connections ended, by reason: client (the client closed or the socket dropped), heartbeat-timeout, slow-consumer, shutdown',
      labelNames: ['reason'],
      registers,
    });
    this.refusedUpgrades = new Counter({
      name: 'leaseq_stream_upgrades_refused_total',
      help: 'Stream upgrades refused before a connection opened, by error code',
      labelNames: ['code'],
      registers,
    });
    this.frames = new Counter({
      name: 'leaseq_stream_frames_received_total',
      help: 'Frames received over the stream, by type (invalid: not readable, answered with an error frame unless the connection was closing)',
      labelNames: ['type'],
      registers,
    });
    this.operations = new Counter({
      name: 'leaseq_stream_operations_total',
      help: 'Operations of batch frames, by operation type (invalid: of no known type) and outcome (ok or the error code)',
      labelNames: ['type', 'outcome'],
      registers,
    });
    this.subscriptionsGauge = new Gauge({
      name: 'leaseq_stream_subscriptions',
      help: 'Subscriptions active over the stream now',
      registers,
    });
    this.pushed = new Counter({
      name: 'leaseq_stream_deliveries_pushed_total',
      help: 'Deliveries pushed to subscriptions',
      registers,
    });
    this.pushFrames = new Counter({
      name: 'leaseq_stream_push_frames_total',
      help: 'Deliveries frames pushed to subscriptions (deliveries per frame = pushed ÷ frames)',
      registers,
    });
    // The fixed label values are written from the start at 0: a series that first appears at 1
    // has no earlier sample, so rate() and increase() would never see that first event.
    for (const reason of STREAM_END_REASONS) this.ended.inc({ reason }, 0);
    for (const type of FRAME_TYPES) this.frames.inc({ type }, 0);
  }

  connectionOpened(): void {
    this.open.inc();
    this.opened.inc();
  }

  connectionEnded(reason: StreamEndReason): void {
    this.open.dec();
    this.ended.inc({ reason });
  }

  upgradeRefused(code: string): void {
    this.refusedUpgrades.inc({ code });
  }

  frameReceived(type: FrameType): void {
    this.frames.inc({ type });
  }

  operation(type: string, outcome: string): void {
    this.operations.inc({ type, outcome });
  }

  subscriptions(change: 1 | -1): void {
    this.subscriptionsGauge.inc(change);
  }

  deliveriesPushed(count: number): void {
    this.pushFrames.inc();
    this.pushed.inc(count);
  }
}
