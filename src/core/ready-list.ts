import { Fifo } from './fifo.js';

/**
 * What the ready list needs of a job: the tick it became ready, which does not change while the
 * job is in the list (it may once out, before it is added again).
 */
export interface ReadyEntry {
  availableAt: number;
}

/**
 * The ready jobs, front first, with O(1) insertion at both ends and removal at the front, O(1)
 * amortised removal of any job, and the earliest `availableAt` (for the oldest-ready-age gauge).
 *
 * Held as two parts: `front`, a stack of jobs put back at the front (newest on top), and
 * `back`, a FIFO of jobs appended at the back. The list reads top-of-stack … bottom, then the
 * FIFO. The earliest `availableAt` is counted by tick (Ticks), not kept by place, so that a job
 * removed from anywhere, even the one that held it, leaves it exact without a pass over the list.
 *
 * A job removed from inside (`remove`) stays in its part, marked, and is passed over where it
 * is met; the parts are rebuilt without the marked jobs once they are half of what is held. A
 * marked job added again is held twice until its marked copy is passed over: added at the back
 * it is its last copy in list order, added at the front its first, which tells the copies apart
 * (rebuilding instead would make each remove and add again O(n)).
 */
export class ReadyList<T extends ReadyEntry> {
  private readonly front: T[] = [];
  private readonly back = new Fifo<T>();
  /** The jobs held, counted by `availableAt`. */
  private readonly ticks = new Ticks();
  /** Jobs with marked copies still held in `front` or `back`; undefined while none. */
  private removed: Map<T, RemovedCopies> | undefined;
  /** The marked copies held, all jobs together. */
  private removedCount = 0;

  get length(): number {
    return this.front.length + this.back.length - this.removedCount;
  }

  /** Empties the list. */
  clear(): void {
    this.front.length = 0;
    this.back.clear();
    this.ticks.clear();
    this.removed = undefined;
    this.removedCount = 0;
  }

  pushFront(item: T): void {
    const copies = this.removed?.get(item);
    if (copies !== undefined) copies.held = 'first';
    this.front.push(item);
    this.ticks.add(item.availableAt);
  }

  pushBack(item: T): void {
    const copies = this.removed?.get(item);
    if (copies !== undefined) copies.held = 'last';
    this.back.push(item);
    this.ticks.add(item.availableAt);
  }

  shift(): T | undefined {
    this.dropRemovedAtFront();
    const item = this.take();
    if (item !== undefined) this.taken(item);
    return item;
  }

  /** Removes `item` if it is the front (O(1)); false when it is not. */
  removeIfFront(item: T): boolean {
    this.dropRemovedAtFront();
    if (this.peek() !== item) return false;
    this.take();
    this.taken(item);
    return true;
  }

  /** Removes `item`, which must be in the list; the others keep their order. */
  remove(item: T): void {
    if (this.removeIfFront(item)) return;
    const copies = this.removed?.get(item);
    // The last one appended (the usual cancel of a job just published) goes at once.
    if (this.back.last() === item && (copies === undefined || copies.held === 'last')) {
      this.back.pop();
      this.taken(item);
      return;
    }
    this.ticks.delete(item.availableAt);
    if (copies !== undefined) {
      copies.count += 1;
      copies.held = undefined;
    } else {
      if (this.removed === undefined) this.removed = new Map();
      this.removed.set(item, { count: 1, held: undefined });
    }
    this.removedCount += 1;
    if (this.removedCount * 2 > this.front.length + this.back.length) this.removeWhere(() => false);
  }

  /** The earliest tick any ready job became ready, or undefined when empty. */
  oldestReadySince(): number | undefined {
    return this.ticks.first();
  }

  /**
   * Removes the items `remove` picks (O(n): for rare operations, such as jobs expiring from
   * inside); the others keep their order.
   */
  removeWhere(remove: (item: T) => boolean): void {
    const kept: T[] = [];
    for (const item of this.values()) {
      if (remove(item)) this.ticks.delete(item.availableAt);
      else kept.push(item);
    }
    // The ticks counted stay those of the kept jobs.
    this.front.length = 0;
    this.back.clear();
    this.removed = undefined;
    this.removedCount = 0;
    for (const item of kept) this.back.push(item);
  }

  /** Front first. */
  *values(): IterableIterator<T> {
    const removed = this.removed;
    // The copies met so far of jobs with marked copies.
    const met = removed === undefined ? undefined : new Map<T, number>();
    const held = (item: T): boolean => {
      const copies = removed?.get(item);
      if (copies === undefined) return true;
      const before = met?.get(item) ?? 0;
      met?.set(item, before + 1);
      if (copies.held === 'first') return before === 0;
      return copies.held === 'last' && before === copies.count;
    };
    for (let i = this.front.length - 1; i >= 0; i--) {
      const item = this.front[i] as T;
      if (held(item)) yield item;
    }
    for (const item of this.back.values()) if (held(item)) yield item;
  }

  /** The front item, marked or not. */
  private peek(): T | undefined {
    const top = this.front[this.front.length - 1];
    return top !== undefined ? top : this.back.first();
  }

  /** Takes the front item, marked or not. */
  private take(): T | undefined {
    const fromFront = this.front.pop();
    return fromFront !== undefined ? fromFront : this.back.shift();
  }

  /** A job held (not a marked copy) left the list. */
  private taken(item: T): void {
    this.ticks.delete(item.availableAt);
    const copies = this.removed?.get(item);
    if (copies !== undefined) copies.held = undefined;
  }

  /**
   * Passes over the marked copies at the front, so that the front is a job held: a job's first
   * copy in list order is marked unless it was added again at the front.
   */
  private dropRemovedAtFront(): void {
    const removed = this.removed;
    if (removed === undefined) return;
    for (let top = this.peek(); top !== undefined; top = this.peek()) {
      const copies = removed.get(top);
      if (copies === undefined || copies.held === 'first') break;
      this.take();
      copies.count -= 1;
      this.removedCount -= 1;
      if (copies.count === 0) removed.delete(top);
    }
    if (this.removedCount === 0) this.removed = undefined;
  }
}

/**
 * The marked copies of one job still held, and where its copy in the list is when it was added
 * again: its first in list order (at the front), its last (at the back), or none.
 */
interface RemovedCopies {
  count: number;
  held: 'first' | 'last' | undefined;
}

/** Below this many passed entries the arrays of Ticks are not cut. */
const MIN_COMPACT = 1024;

/**
 * How many jobs are held of each tick, the ticks in increasing order. Jobs come mostly at the
 * latest tick (a publish, a job put back) and leave mostly from the earliest (the front of a
 * FIFO) or the latest (a job put back and taken again): those are O(1). A tick met inside (a job
 * removed from inside, a delayed job due before one that came ahead of this queue's clock, R26)
 * is found by binary search; a tick with no job left inside is kept until it reaches an end, or
 * until such ticks are half of those held.
 */
class Ticks {
  private ats: number[] = [];
  private jobs: number[] = [];
  private head = 0;
  /** Ticks inside with no job left. */
  private empty = 0;

  clear(): void {
    this.ats.length = 0;
    this.jobs.length = 0;
    this.head = 0;
    this.empty = 0;
  }

  /** The earliest tick with a job, or undefined when none. */
  first(): number | undefined {
    return this.head < this.ats.length ? this.ats[this.head] : undefined;
  }

  add(at: number): void {
    const last = this.ats.length - 1;
    if (last < this.head || at > (this.ats[last] as number)) {
      this.ats.push(at);
      this.jobs.push(1);
      return;
    }
    const index = at === this.ats[last] ? last : this.find(at);
    if (this.ats[index] === at) {
      if (this.jobs[index] === 0) this.empty -= 1;
      this.jobs[index] = (this.jobs[index] as number) + 1;
    } else if (index === this.head && this.head > 0) {
      // Before every tick held, where a passed entry was.
      this.head -= 1;
      this.ats[this.head] = at;
      this.jobs[this.head] = 1;
    } else {
      this.ats.splice(index, 0, at);
      this.jobs.splice(index, 0, 1);
    }
  }

  /** Counts off one job of tick `at`, which must have one. */
  delete(at: number): void {
    const last = this.ats.length - 1;
    const index =
      at === this.ats[this.head] ? this.head : at === this.ats[last] ? last : this.find(at);
    const left = (this.jobs[index] as number) - 1;
    this.jobs[index] = left;
    if (left > 0) return;
    if (index === this.head) this.dropEmptyAtHead();
    else if (index === last) this.dropEmptyAtTail();
    else {
      this.empty += 1;
      if (this.empty * 2 > this.ats.length - this.head) this.dropEmpty();
    }
  }

  /** The index of `at`, or of the first tick after it (binary search). */
  private find(at: number): number {
    let low = this.head;
    let high = this.ats.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.ats[middle] as number) < at) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private dropEmptyAtHead(): void {
    this.head += 1;
    while (this.head < this.ats.length && this.jobs[this.head] === 0) {
      this.head += 1;
      this.empty -= 1;
    }
    if (this.head === this.ats.length) this.clear();
    else if (this.head > MIN_COMPACT && this.head * 2 > this.ats.length) {
      this.ats = this.ats.slice(this.head);
      this.jobs = this.jobs.slice(this.head);
      this.head = 0;
    }
  }

  private dropEmptyAtTail(): void {
    this.ats.pop();
    this.jobs.pop();
    while (this.ats.length > this.head && this.jobs[this.jobs.length - 1] === 0) {
      this.ats.pop();
      this.jobs.pop();
      this.empty -= 1;
    }
    if (this.head === this.ats.length) this.clear();
  }

  /** Keeps only the ticks with jobs. */
  private dropEmpty(): void {
    const ats: number[] = [];
    const jobs: number[] = [];
    for (let i = this.head; i < this.ats.length; i++) {
      const count = this.jobs[i] as number;
      if (count === 0) continue;
      ats.push(this.ats[i] as number);
      jobs.push(count);
    }
    this.ats = ats;
    this.jobs = jobs;
    this.head = 0;
    this.empty = 0;
  }
}
