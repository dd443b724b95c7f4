import type { QueueStats } from './types.js';

/** The R17 counters that only ever grow. */
export type Counters = Omit<
  QueueStats,
  | 'queueTime'
  | 'ready'
  | 'delayed'
  | 'active'
  | 'dead'
  | 'waiting'
  | 'sessions'
  | 'paused'
  | 'oldestReadyAge'
>;

export function newCounters(): Counters {
  return {
    published: 0,
    duplicates: 0,
    refused: 0,
    deliveries: 0,
    redeliveries: 0,
    acks: 0,
    nacks: 0,
    unworked: 0,
    expiries: 0,
    sessionReleases: 0,
    extensions: 0,
    staleAcks: 0,
    staleNacks: 0,
    staleExtends: 0,
    redriven: 0,
    purged: 0,
    autoAcked: 0,
    cancelled: 0,
    expired: 0,
    deadLetters: {},
    processingTime: { count: 0, sum: 0, max: 0 },
  };
}

export function copyCounters(counters: Counters): Counters {
  return {
    ...counters,
    deadLetters: { ...counters.deadLetters },
    processingTime: { ...counters.processingTime },
  };
}
