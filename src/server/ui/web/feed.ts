import { type Api, ApiError, WAITING_SHOWN } from './api.js';
import type {
  AllStats,
  DeadLetterPage,
  DeliveryPage,
  InspectView,
  JobView,
  Me,
  QueueInfo,
  QueueStats,
  StatsQuery,
} from './wire.js';

/** What the pages read, by kind. */
export interface Reads {
  me: Me;
  /** A page of the queues' figures (GET /v1/stats, the topic's `page`): the overview's rows. */
  stats: AllStats;
  /** One queue's figures (GET /v1/queues/{name}/stats). */
  queueStats: QueueStats;
  queue: QueueInfo;
  /** The first WAITING_SHOWN entries of each list; the counts are in the stats. */
  inspect: InspectView;
  /** The oldest deliveries in flight, a page of DELIVERIES_SHOWN; the count is in the stats. */
  deliveries: DeliveryPage;
  /** The oldest dead letters, a page of DEAD_LETTERS_SHOWN. */
  deadLetters: DeadLetterPage;
  job: JobView;
}

export type Kind = keyof Reads;

/**
 * One subject of live updates: a kind, and the queue (and job) it is about, or the page of
 * queues (`stats`).
 */
export type Topic<K extends Kind = Kind> = {
  kind: K;
  queue?: string;
  id?: string;
  page?: StatsQuery;
};

export interface Update<T> {
  data?: T;
  error?: Error;
  /** When this was read (browser clock, ms). */
  at: number;
}

export interface FeedState {
  paused: boolean;
  /** When the server last answered a read (browser clock, ms); 0 before the first. */
  lastUpdate: number;
  /**
   * Why the latest read of a subscribed topic got no answer (the server unreachable, failing
   * or refusing the key); undefined while every topic is read.
   */
  failing?: string;
}

/**
 * Where live data comes from. Pages only subscribe to topics; whether the answers come from
 * polling or, later, from a streaming channel is this interface's business.
 */
export interface Feed {
  subscribe<K extends Kind>(
    topic: Topic<K>,
    listener: (update: Update<Reads[K]>) => void,
  ): () => void;
  /**
   * Reads every subscribed topic again now (after an action changed something). A read already
   * on its way started before the change: its answer is not drawn, and the topic is read again
   * as soon as it is in.
   */
  refresh(): void;
  /**
   * Hears every read of every topic, before the topic's subscribers do (to keep a history of
   * what was read); it asks for nothing.
   */
  onRead(listener: (topic: Topic, update: Update<unknown>) => void): () => void;
  setPaused(paused: boolean): void;
  readonly state: FeedState;
  onState(listener: (state: FeedState) => void): () => void;
}

/** One key per subject: two pages of queues, or two filters, are two topics. */
export const topicKey = (topic: Topic) =>
  [
    topic.kind,
    topic.queue ?? '',
    topic.id ?? '',
    ...(topic.page === undefined
      ? []
      : [topic.page.contains, String(topic.page.offset), String(topic.page.limit)]),
  ]
    .map(encodeURIComponent)
    .join('/');

function reader(api: Api, topic: Topic): () => Promise<unknown> {
  const queue = topic.queue ?? '';
  switch (topic.kind) {
    case 'me':
      return api.me;
    case 'stats':
      return () => api.allStats(topic.page);
    case 'queueStats':
      return () => api.queueStats(queue);
    case 'queue':
      return () => api.queue(queue);
    case 'inspect':
      return () => api.inspect(queue, WAITING_SHOWN);
    case 'deliveries':
      return () => api.deliveries(queue);
    case 'deadLetters':
      return () => api.deadLetters(queue);
    case 'job':
      return () => api.job(queue, topic.id ?? '');
  }
}

interface Poll {
  topic: Topic;
  read: () => Promise<unknown>;
  listeners: Set<(update: Update<unknown>) => void>;
  last?: Update<unknown>;
  /** When the read on its way started (browser clock, ms); undefined when none is. */
  since?: number;
  /** Something changed after the read on its way started: its answer is old news. */
  outdated: boolean;
  /** Why its latest read got no answer (or the one on its way has none yet), if so. */
  failed?: string;
}

/**
 * How many intervals a read may be on its way before its topic counts as not updating: a server
 * that is stopped, not down, takes a request and never answers.
 */
export const SLOW_INTERVALS = 2;

/**
 * Statuses that put the read off rather than answer it: try again later. A proxy's rate limit
 * (429) or its timeout (408) says nothing of the queue, however long it goes on.
 */
const PUT_OFF = new Set([408, 429]);

/**
 * Whether an error means the server gave no answer worth the name: unreachable, failing (5xx),
 * refusing the key (401), or putting the read off (408, 429). A 403 or 404 is an answer: this
 * key may not, or the thing is gone.
 */
function unanswered(error: unknown): boolean {
  return (
    !(error instanceof ApiError) ||
    error.status >= 500 ||
    error.status === 401 ||
    PUT_OFF.has(error.status)
  );
}

/** What a document offers the feed: whether it is hidden, and word when that changes. */
export interface Visibility {
  readonly hidden: boolean;
  addEventListener(type: 'visibilitychange', listener: () => void): void;
}

/** The feed over plain HTTP: every subscribed topic is read every `intervalMs`. */
export class PollingFeed implements Feed {
  private readonly polls = new Map<string, Poll>();
  private readonly stateListeners = new Set<(state: FeedState) => void>();
  private readonly readListeners = new Set<(topic: Topic, update: Update<unknown>) => void>();
  private timer: ReturnType<typeof setInterval> | undefined;
  state: FeedState = { paused: false, lastUpdate: 0 };

  constructor(
    private readonly api: Api,
    private readonly intervalMs = 2000,
    page: Visibility = document,
  ) {
    // A hidden tab asks nothing; it catches up when shown again.
    page.addEventListener('visibilitychange', () => {
      if (!page.hidden && !this.state.paused) this.readIdle();
    });
    this.timer = setInterval(() => {
      if (!this.state.paused && !page.hidden) this.readIdle();
      this.markSlow();
    }, this.intervalMs);
  }

  subscribe<K extends Kind>(
    topic: Topic<K>,
    listener: (update: Update<Reads[K]>) => void,
  ): () => void {
    const key = topicKey(topic);
    let poll = this.polls.get(key);
    if (poll === undefined) {
      poll = { topic, read: reader(this.api, topic), listeners: new Set(), outdated: false };
      this.polls.set(key, poll);
    }
    const untyped = listener as (update: Update<unknown>) => void;
    poll.listeners.add(untyped);
    if (poll.last !== undefined) untyped(poll.last);
    else void this.read(poll);
    return () => {
      poll.listeners.delete(untyped);
      if (poll.listeners.size === 0 && this.polls.get(key) === poll) {
        this.polls.delete(key);
        // A topic no longer read cannot keep the feed failing.
        if (poll.failed !== undefined) this.setState(this.withFailure(this.state));
      }
    };
  }

  refresh(): void {
    for (const poll of this.polls.values()) {
      if (poll.since === undefined) void this.read(poll);
      else poll.outdated = true;
    }
  }

  setPaused(paused: boolean): void {
    this.setState({ ...this.state, paused });
    if (!paused) this.readIdle();
  }

  onRead(listener: (topic: Topic, update: Update<unknown>) => void): () => void {
    this.readListeners.add(listener);
    return () => this.readListeners.delete(listener);
  }

  onState(listener: (state: FeedState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  close(): void {
    clearInterval(this.timer);
    this.polls.clear();
  }

  /** Reads every topic that has no read on its way (a poll's tick). */
  private readIdle(): void {
    for (const poll of this.polls.values()) if (poll.since === undefined) void this.read(poll);
  }

  /** A topic whose read has been on its way too long is not updating, answer or not to come. */
  private markSlow(): void {
    const now = Date.now();
    let changed = false;
    for (const poll of this.polls.values()) {
      if (poll.since === undefined || now - poll.since < SLOW_INTERVALS * this.intervalMs) continue;
      poll.failed = `the server has not answered for ${Math.round((now - poll.since) / 1000)} s`;
      changed = true;
    }
    if (changed) this.setState(this.withFailure(this.state));
  }

  private async read(poll: Poll): Promise<void> {
    if (poll.since !== undefined) return;
    poll.since = Date.now();
    poll.outdated = false;
    let update: Update<unknown>;
    let answered = true;
    try {
      update = { data: await poll.read(), at: Date.now() };
      poll.failed = undefined;
    } catch (error) {
      // A thing gone (404) or refused (403) has no latest state to keep showing.
      const dropped = error instanceof ApiError && (error.status === 404 || error.status === 403);
      update = { ...(dropped ? {} : poll.last), error: error as Error, at: Date.now() };
      answered = !unanswered(error);
      poll.failed = answered ? undefined : (error as Error).message || 'no answer';
    } finally {
      poll.since = undefined;
    }
    if (poll.outdated) {
      // Read before an action changed things: drawn now, it would show the state before the
      // action as the state after it. The topic is read again at once instead.
      if (this.polls.get(topicKey(poll.topic)) === poll) void this.read(poll);
    } else {
      poll.last = update;
      for (const listener of [...this.readListeners]) listener(poll.topic, update);
      for (const listener of [...poll.listeners]) listener(update);
    }
    // Only an answer makes the feed current: a failed read says so, and leaves the time.
    const state = this.withFailure(this.state);
    this.setState(answered ? { ...state, lastUpdate: update.at } : state);
  }

  /** `state` with `failing` as the topics read now say. */
  private withFailure(state: FeedState): FeedState {
    const failing = [...this.polls.values()].find((poll) => poll.failed !== undefined)?.failed;
    const { failing: _, ...rest } = state;
    return failing === undefined ? rest : { ...rest, failing };
  }

  private setState(state: FeedState): void {
    this.state = state;
    for (const listener of [...this.stateListeners]) listener(state);
  }
}
