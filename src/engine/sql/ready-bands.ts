import type { QueueRow } from './queue-row.js';

/**
 * Ready positions by priority (R23). One `ready_pos` column orders every ready job of a queue:
 * priority p lives in its own band of positions around −p·BAND_SPAN, so ORDER BY ready_pos is
 * the order jobs are handed out in (higher priorities first), and each band stays a contiguous
 * range head..tail like the single list before it: front insertion takes head − 1, back
 * insertion tail + 1, reservation takes from head. Priority 0 is the band of the queue row's
 * readyHead/readyTail columns, so a queue that never uses priorities reads and writes nothing
 * more than before.
 */
export const BAND_SPAN = 2 ** 48;

/** The bounds of one priority's band of positions: empty when head = tail + 1. */
export interface Band {
  head: number;
  tail: number;
}

/** The bands of priorities 1..9 (index = priority), stored as JSON; null until first used. */
export type RankedBands = (Band | null)[];

function emptyBand(priority: number): Band {
  const base = -priority * BAND_SPAN;
  return { head: base + 1, tail: base };
}

function band(q: QueueRow, priority: number): Band {
  q.bands ??= [];
  let found = q.bands[priority];
  if (found === undefined || found === null) {
    found = emptyBand(priority);
    q.bands[priority] = found;
  }
  return found;
}

/** The position of a job appended at the back of its priority. */
export function backPosition(q: QueueRow, priority: number): number {
  if (priority === 0) {
    q.readyTail += 1;
    return q.readyTail;
  }
  const bounds = band(q, priority);
  bounds.tail += 1;
  return bounds.tail;
}

/** The position of a job put back at the front of its priority. */
export function frontPosition(q: QueueRow, priority: number): number {
  if (priority === 0) {
    q.readyHead -= 1;
    return q.readyHead;
  }
  const bounds = band(q, priority);
  bounds.head -= 1;
  return bounds.head;
}

/**
 * The ready jobs of each non-empty band, highest priority first, ending with priority 0:
 * where each starts and how many it holds. Reserving takes whole bands in this order, so
 * when one is reached every band before it is empty and `ready_pos < head + k` selects
 * exactly its front k.
 */
export function readyRanges(q: QueueRow): { priority: number; head: number; size: number }[] {
  const ranges: { priority: number; head: number; size: number }[] = [];
  if (q.bands !== null) {
    for (let priority = q.bands.length - 1; priority >= 1; priority--) {
      const bounds = q.bands[priority];
      if (bounds == null) continue;
      const size = bounds.tail - bounds.head + 1;
      if (size > 0) ranges.push({ priority, head: bounds.head, size });
    }
  }
  ranges.push({ priority: 0, head: q.readyHead, size: q.readyTail - q.readyHead + 1 });
  return ranges;
}

/** Where priority `priority`'s band starts (its front job's position, when it has one). */
export function bandHead(q: QueueRow, priority: number): number {
  return priority === 0 ? q.readyHead : band(q, priority).head;
}

/**
 * R31: the band of the lowest priority that has a ready job, with its head (where the oldest
 * ready job of the queue stands); undefined when nothing is ready.
 */
export function lowestReadyBand(q: QueueRow): { priority: number; head: number } | undefined {
  if (q.readyTail >= q.readyHead) return { priority: 0, head: q.readyHead };
  if (q.bands === null) return undefined;
  for (let priority = 1; priority < q.bands.length; priority++) {
    const bounds = q.bands[priority];
    if (bounds != null && bounds.tail >= bounds.head) return { priority, head: bounds.head };
  }
  return undefined;
}

/** Where priority `priority`'s band ends (its back job's position, when it has one). */
export function bandTail(q: QueueRow, priority: number): number {
  return priority === 0 ? q.readyTail : band(q, priority).tail;
}

/** `count` jobs fewer at the back of a band (after the caller's statement moved the others up). */
export function retreatTail(q: QueueRow, priority: number, count = 1): void {
  if (priority === 0) q.readyTail -= count;
  else band(q, priority).tail -= count;
}

/** Takes `count` jobs from the front of a band (after the caller's statement took them). */
export function advanceHead(q: QueueRow, priority: number, count: number): void {
  if (priority === 0) q.readyHead += count;
  else band(q, priority).head += count;
}

/** Every band empty (R19 purge). */
export function emptyBands(q: QueueRow): void {
  q.readyHead = q.readyTail + 1;
  if (q.bands === null) return;
  for (const bounds of q.bands) if (bounds != null) bounds.head = bounds.tail + 1;
}

/** True when some job of a priority above 0 is ready: the reserve takes bands one by one. */
export function hasRankedReady(q: QueueRow): boolean {
  if (q.bands === null) return false;
  for (const bounds of q.bands) if (bounds != null && bounds.tail >= bounds.head) return true;
  return false;
}
