import { Fifo } from './fifo.js';

/** What the ready list needs of a job: the tick it became ready. */
export interface ReadyEntry {
  availableAt: number;
}

/** Below this many removed items the list is not rebuilt for memory's sake alone. */
const MIN_REBUILD = 1024;

/**
 * The ready jobs, front first, with O(1) insertion at both ends, removal at the front, and
 * the earliest `availableAt` (for the oldest-ready-age gauge); O(1) amortised removal of any job.
 *
 * Held as two parts: `front`, a stack of jobs put back at the front (newest on top), and
 * `back`, a FIFO of jobs appended at the back. The list reads top-of-stack … bottom, then the
 * FIFO. Front insertions always carry the latest time, so the stack's bottom is its oldest;
 * the FIFO keeps a monotonic minimum queue because promoted delayed jobs may carry earlier
 * `availableAt` than jobs appended before them. Of the jobs with one `availableAt` it keeps the
 * last appended (the earlier ones leave first), so a publish of many jobs at one tick adds one
 * entry to it, not one per job.
 *
 * A job removed from inside (`remove`) stays in its part, marked, and is passed over where it
 * is met; the parts are rebuilt without the marked jobs when a marked job is added again, when
 * the earliest `availableAt` is asked of a marked one, or when they outnumber the others.
 */
export class ReadyList<T extends ReadyEntry> {
  private readonly front: T[] = [];
  private readonly back = new Fifo<T>();
  /** The suffix minima of `back` by `availableAt` (marked jobs included), front first. */
  private readonly backMin = new Fifo<T>();
  /**
   * Jobs removed from inside, still held in `front` or `back`, with the `availableAt` they had
   * (a job may change it once out: the minimum queue is kept by the one it had when in the
   * list); undefined while none.
   */
  private removed: Map<T, number> | undefined;

  get length(): number {
    return this.front.length + this.back.length - (this.removed?.size ?? 0);
  }

  /** Empties the list. */
  clear(): void {
    this.front.length = 0;
    this.back.clear();
    this.backMin.clear();
    this.removed = undefined;
  }

  pushFront(item: T): void {
    if (this.removed?.has(item) === true) this.rebuild();
    this.front.push(item);
  }

  pushBack(item: T): void {
    if (this.removed?.has(item) === true) this.rebuild();
    this.back.push(item);
    const mins = this.backMin;
    const removed = this.removed;
    for (let last = mins.last(); last !== undefined; last = mins.last()) {
      const at = removed?.get(last) ?? last.availableAt;
      if (at < item.availableAt) break;
      mins.pop();
    }
    mins.push(item);
  }

  shift(): T | undefined {
    this.dropRemovedAtFront();
    return this.take();
  }

  /** Removes `item` if it is the front (O(1)); false when it is not. */
  removeIfFront(item: T): boolean {
    this.dropRemovedAtFront();
    if (this.peek() !== item) return false;
    this.take();
    return true;
  }

  /** Removes `item`, which must be in the list; the others keep their order. */
  remove(item: T): void {
    if (this.removeIfFront(item)) return;
    if (this.removed === undefined) this.removed = new Map();
    this.removed.set(item, item.availableAt);
    const removed = this.removed.size;
    if (removed > MIN_REBUILD && removed * 2 > this.front.length + this.back.length) {
      this.rebuild();
    }
  }

  /** The earliest tick any ready job became ready, or undefined when empty. */
  oldestReadySince(): number | undefined {
    // The stack's bottom and the minimum queue's first answer only when they are not marked.
    const removed = this.removed;
    if (removed !== undefined) {
      const bottom = this.front[0];
      const backFirst = this.backMin.first();
      if (
        (bottom !== undefined && removed.has(bottom)) ||
        (backFirst !== undefined && removed.has(backFirst))
      ) {
        this.rebuild();
      }
    }
    const bottom = this.front[0];
    const backOldest = this.backMin.first();
    if (bottom === undefined) return backOldest?.availableAt;
    if (backOldest === undefined) return bottom.availableAt;
    return Math.min(bottom.availableAt, backOldest.availableAt);
  }

  /**
   * Removes the items `remove` picks (O(n): for rare operations, such as moving jobs out);
   * the others keep their order.
   */
  removeWhere(remove: (item: T) => boolean): void {
    const kept = Array.from(this.values()).filter((item) => !remove(item));
    this.clear();
    for (const item of kept) this.pushBack(item);
  }

  /** Front first. */
  *values(): IterableIterator<T> {
    const removed = this.removed;
    for (let i = this.front.length - 1; i >= 0; i--) {
      const item = this.front[i] as T;
      if (removed === undefined || !removed.has(item)) yield item;
    }
    for (const item of this.back.values()) {
      if (removed === undefined || !removed.has(item)) yield item;
    }
  }

  /** The front item, marked or not. */
  private peek(): T | undefined {
    const top = this.front[this.front.length - 1];
    return top !== undefined ? top : this.back.first();
  }

  /** Takes the front item, marked or not. */
  private take(): T | undefined {
    const fromFront = this.front.pop();
    if (fromFront !== undefined) return fromFront;
    const item = this.back.shift();
    if (item !== undefined && this.backMin.first() === item) this.backMin.shift();
    return item;
  }

  /** Passes over the marked items at the front, so that the front is one that is not. */
  private dropRemovedAtFront(): void {
    const removed = this.removed;
    if (removed === undefined) return;
    for (let top = this.peek(); top !== undefined && removed.delete(top); top = this.peek()) {
      this.take();
    }
    if (removed.size === 0) this.removed = undefined;
  }

  /** Holds only the unmarked items, in their order. */
  private rebuild(): void {
    this.removeWhere(() => false);
  }
}
