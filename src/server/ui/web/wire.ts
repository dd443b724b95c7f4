/** The shapes the dashboard reads from the public API (the same types the server answers with). */
export type {
  Attempt,
  DeadLetter,
  DeadLetterPage,
  DeliveryPage,
  InspectView,
  JobView,
  LiveDelivery,
  QueueStats,
} from '../../../core/types.js';

import type { QueueStats } from '../../../core/types.js';

export type Action = 'read' | 'publish' | 'consume' | 'admin';

/** Queue options as JSON carries them: `null` for unbounded. */
export interface WireQueueOptions {
  visibility: number;
  prefetch: number | null;
  maxDeliveries: number | null;
  maxLease: number | null;
  dedupWindow: number;
  /** Present when jobs that die move to another queue (R26). */
  deadLetterQueue?: string;
  /** Present (true) while the queue is paused (R27). */
  paused?: boolean;
  /** Present when ready and delayed jobs expire this long after publish (R30), ms. */
  retention?: number;
  /** Present when ready jobs are bounded (R31), with what a publish beyond it does. */
  maxLength?: number;
  overflow?: 'reject' | 'dead-letter-oldest';
}

export interface QueueInfo {
  name: string;
  options: WireQueueOptions;
}

export interface Me {
  name: string;
  keysRequired: boolean;
  grants: { queues: string; actions: Action[] }[];
  queues: { name: string; actions: Action[] }[];
}

/** A page of the queues' figures (GET /v1/stats?contains=&offset=&limit=), by name. */
export interface AllStats {
  queues: { name: string; stats: QueueStats }[];
  /** How many queues the key can see whose name matches `contains` (every page of them). */
  total: number;
}

/** Which page of the queues GET /v1/stats answers. */
export interface StatsQuery {
  /** Only names containing this, upper or lower case alike ('' for all). */
  contains: string;
  offset: number;
  limit: number;
}
