import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JobState, QueueStats } from '../core/index.js';
import type { StatNumber } from './schemas.js';

/** Where each R17 number of `QueueStats` goes in Prometheus. Every queue is a `queue` label. */
const COUNTERS: Record<
  Exclude<StatNumber, 'queueTime' | JobState | 'sessions' | 'oldestReadyAge'>,
  [string, string]
> = {
  published: ['leaseq_published_total', 'Jobs published (duplicates not counted)'],
  duplicates: ['leaseq_duplicate_publishes_total', 'Publishes refused as duplicates (R4)'],
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
 * one storage shows the same values (aggregate with max, not sum) and they survive restarts.
 */
const FROM_STORAGE =
  '; read from the storage at scrape: the same on every server sharing it, kept across restarts';

const JOB_STATES: readonly JobState[] = ['ready', 'delayed', 'active', 'dead', 'waiting'];

/** Prometheus metrics of one server: HTTP traffic, and every queue's R17 figures read at scrape. */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'leaseq_http_requests_total',
    help: 'HTTP requests answered, by route template and status',
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
  private readonly jobs = this.gauge('leaseq_jobs', 'Jobs by state (R17)', ['queue', 'state']);
  private readonly sessions = this.gauge('leaseq_sessions', 'Open sessions', ['queue']);
  private readonly paused = this.gauge(
    'leaseq_queue_paused',
    'Whether the queue is paused (R27): 1 hands out nothing, 0 runs',
    ['queue'],
  );
  private readonly oldestReady = this.gauge(
    'leaseq_oldest_ready_age_seconds',
    'Age of the longest-waiting ready job',
    ['queue'],
  );
  private readonly counters = Object.entries(COUNTERS).map(
    ([field, [name, help]]) =>
      [field as keyof typeof COUNTERS, this.counter(name, help, ['queue'])] as const,
  );
  private readonly deadLetters = this.counter(
    'leaseq_dead_letters_total',
    'Jobs dead-lettered, by reason kind (R17: max-deliveries, rejected, retries-exhausted, ambiguous, permanent, cancelled, expired, maxlen)',
    ['queue', 'reason'],
  );
  private readonly processed = this.counter(
    'leaseq_processed_total',
    'Acked deliveries whose processing time is counted',
    ['queue'],
  );
  private readonly processingSeconds = this.counter(
    'leaseq_processing_seconds_total',
    'Total time from delivery to ack of acked deliveries',
    ['queue'],
  );
  private readonly processingMax = this.gauge(
    'leaseq_processing_max_seconds',
    'Longest time from delivery to ack of one delivery',
    ['queue'],
  );
  /** The stream (docs/stream.md): connections, frames, operations and pushed deliveries. */
  readonly stream = new StreamMetrics(this.registry);
  private rendering: Promise<unknown> = Promise.resolve();

  get contentType(): string {
    return this.registry.contentType;
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.latency.observe({ method, route }, seconds);
  }

  /**
   * The exposition text, with queue figures from `readStats` (one snapshot per queue). Scrapes
   * run one after another so that two never mix their snapshots.
   */
  render(readStats: () => Promise<[string, QueueStats][]>): Promise<string> {
    const next = this.rendering.then(async () => {
      this.setQueueFigures(await readStats());
      return this.registry.metrics();
    });
    this.rendering = next.catch(() => undefined);
    return next;
  }

  private setQueueFigures(all: [string, QueueStats][]): void {
    for (const metric of this.queueMetrics()) metric.reset();
    for (const [queue, stats] of all) {
      for (const state of JOB_STATES) this.jobs.set({ queue, state }, stats[state]);
      this.sessions.set({ queue }, stats.sessions);
      this.paused.set({ queue }, stats.paused ? 1 : 0);
      this.oldestReady.set({ queue }, stats.oldestReadyAge / 1000);
      for (const [field, counter] of this.counters) counter.inc({ queue }, stats[field]);
      for (const [reason, count] of Object.entries(stats.deadLetters)) {
        this.deadLetters.inc({ queue, reason }, count);
      }
      this.processed.inc({ queue }, stats.processingTime.count);
      this.processingSeconds.inc({ queue }, stats.processingTime.sum / 1000);
      this.processingMax.set({ queue }, stats.processingTime.max / 1000);
    }
  }

  private queueMetrics(): { reset(): void }[] {
    return [
      this.jobs,
      this.sessions,
      this.paused,
      this.oldestReady,
      ...this.counters.map(([, counter]) => counter),
      this.deadLetters,
      this.processed,
      this.processingSeconds,
      this.processingMax,
    ];
  }

  private gauge<L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  /** A queue counter: its help says where the value comes from (FROM_STORAGE). */
  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return new Counter({
      name,
      help: `${help}${FROM_STORAGE}`,
      labelNames,
      registers: [this.registry],
    });
  }
}

/** Why a stream connection ended, as the `reason` label of its counter. */
export type StreamEndReason = 'client' | 'heartbeat-timeout' | 'slow-consumer' | 'shutdown';

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
      help: 'Frames received over the stream, by type (invalid: not readable, answered with an error frame)',
      labelNames: ['type'],
      registers,
    });
    this.operations = new Counter({
      name: 'leaseq_stream_operations_total',
      help: 'Operations of batch frames, by operation type and outcome (ok or the error code)',
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

  frameReceived(type: string): void {
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
