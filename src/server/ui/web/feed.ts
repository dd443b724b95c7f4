import { type Api, WAITING_SHOWN } from './api.js';
import type {
  AllStats,
  DeadLetterPage,
  InspectView,
  JobView,
  LiveDelivery,
  Me,
  QueueInfo,
} from './wire.js';

/** What the pages read, by kind. */
export interface Reads {
  me: Me;
  stats: AllStats;
  queue: QueueInfo;
  /** The first WAITING_SHOWN entries of each list; the counts are in the stats. */
  inspect: InspectView;
  deliveries: LiveDelivery[];
  /** The oldest dead letters, a page of DEAD_LETTERS_SHOWN. */
  deadLetters: DeadLetterPage;
  job: JobView;
}

export type Kind = keyof Reads;

/** One subject of live updates: a kind, and the queue (and job) it is about. */
export type Topic<K extends Kind = Kind> = { kind: K; queue?: string; id?: string };

export interface Update<T> {
  data?: T;
  error?: Error;
  /** When this was read (browser clock, ms). */
  at: number;
}

export interface FeedState {
  paused: boolean;
  /** When the last read of any topic ended (browser clock, ms); 0 before the first. */
  lastUpdate: number;
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
  /** Reads every subscribed topic again now (after an action changed something). */
  refresh(): void;
  setPaused(paused: boolean): void;
  readonly state: FeedState;
  onState(listener: (state: FeedState) => void): () => void;
}

export const topicKey = (topic: Topic) =>
  [topic.kind, topic.queue ?? '', topic.id ?? ''].map(encodeURIComponent).join('/');

function reader(api: Api, topic: Topic): () => Promise<unknown> {
  const queue = topic.queue ?? '';
  switch (topic.kind) {
    case 'me':
      return api.me;
    case 'stats':
      return api.allStats;
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
  read: () => Promise<unknown>;
  listeners: Set<(update: Update<unknown>) => void>;
  last?: Update<unknown>;
  inFlight: boolean;
}

/** The feed over plain HTTP: every subscribed topic is read every `intervalMs`. */
export class PollingFeed implements Feed {
  private readonly polls = new Map<string, Poll>();
  private readonly stateListeners = new Set<(state: FeedState) => void>();
  private timer: ReturnType<typeof setInterval> | undefined;
  state: FeedState = { paused: false, lastUpdate: 0 };

  constructor(
    private readonly api: Api,
    private readonly intervalMs = 2000,
  ) {
    // A hidden tab asks nothing; it catches up when shown again.
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && !this.state.paused) this.refresh();
    });
    this.timer = setInterval(() => {
      if (!this.state.paused && !document.hidden) this.refresh();
    }, this.intervalMs);
  }

  subscribe<K extends Kind>(
    topic: Topic<K>,
    listener: (update: Update<Reads[K]>) => void,
  ): () => void {
    const key = topicKey(topic);
    let poll = this.polls.get(key);
    if (poll === undefined) {
      poll = { read: reader(this.api, topic), listeners: new Set(), inFlight: false };
      this.polls.set(key, poll);
    }
    const untyped = listener as (update: Update<unknown>) => void;
    poll.listeners.add(untyped);
    if (poll.last !== undefined) untyped(poll.last);
    else void this.read(poll);
    return () => {
      poll.listeners.delete(untyped);
      if (poll.listeners.size === 0) this.polls.delete(key);
    };
  }

  refresh(): void {
    for (const poll of this.polls.values()) void this.read(poll);
  }

  setPaused(paused: boolean): void {
    this.setState({ ...this.state, paused });
    if (!paused) this.refresh();
  }

  onState(listener: (state: FeedState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  close(): void {
    clearInterval(this.timer);
    this.polls.clear();
  }

  private async read(poll: Poll): Promise<void> {
    if (poll.inFlight) return;
    poll.inFlight = true;
    let update: Update<unknown>;
    try {
      update = { data: await poll.read(), at: Date.now() };
    } catch (error) {
      update = { ...poll.last, error: error as Error, at: Date.now() };
    } finally {
      poll.inFlight = false;
    }
    poll.last = update;
    for (const listener of [...poll.listeners]) listener(update);
    this.setState({ ...this.state, lastUpdate: update.at });
  }

  private setState(state: FeedState): void {
    this.state = state;
    for (const listener of [...this.stateListeners]) listener(state);
  }
}
