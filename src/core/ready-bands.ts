import { ReadyList } from './ready-list.js';

/** What the banded ready list needs of a job: its priority (R23) and when it became ready. */
export interface RankedEntry {
  /** Undefined means priority 0. */
  readonly traits: { readonly priority: number } | undefined;
  availableAt: number;
}

/** Priorities are the integers 0 (the default, lowest) to 9 (highest) (R23). */
export const MAX_PRIORITY = 9;

/**
 * The ready jobs by priority, highest first; within a priority, a ReadyList (front and back
 * as R4, R9, R12 say). Priority 0 is its own field, so a queue that never uses another
 * priority pays one integer comparison per call beyond the plain list.
 */
export class ReadyBands<T extends RankedEntry> {
  private readonly plain = new ReadyList<T>();
  /** Lists of priorities 1..9, made at first use; index = priority. */
  private readonly ranked: (ReadyList<T> | undefined)[] = [];
  /** Ready jobs of priority above 0. */
  private rankedLength = 0;

  get length(): number {
    return this.plain.length + this.rankedLength;
  }

  clear(): void {
    this.plain.clear();
    for (const list of this.ranked) list?.clear();
    this.rankedLength = 0;
  }

  pushFront(item: T): void {
    const traits = item.traits;
    if (traits === undefined || traits.priority === 0) this.plain.pushFront(item);
    else this.band(traits.priority).pushFront(item);
  }

  pushBack(item: T): void {
    const traits = item.traits;
    if (traits === undefined || traits.priority === 0) this.plain.pushBack(item);
    else this.band(traits.priority).pushBack(item);
  }

  /** Takes the front job of the highest priority that has one. */
  shift(): T | undefined {
    if (this.rankedLength > 0) {
      for (let priority = MAX_PRIORITY; priority >= 1; priority--) {
        const list = this.ranked[priority];
        if (list !== undefined && list.length > 0) {
          this.rankedLength -= 1;
          return list.shift();
        }
      }
    }
    return this.plain.shift();
  }

  /**
   * Takes the front job of the lowest priority that has one (R31's oldest ready job): the front
   * of ready in a queue without priorities.
   */
  shiftLowest(): T | undefined {
    if (this.plain.length > 0 || this.rankedLength === 0) return this.plain.shift();
    for (let priority = 1; priority <= MAX_PRIORITY; priority++) {
      const list = this.ranked[priority];
      if (list !== undefined && list.length > 0) {
        this.rankedLength -= 1;
        return list.shift();
      }
    }
    return undefined;
  }

  /**
   * Removes a ready job if it is the front of its priority (O(1), R30's usual case: the jobs
   * published first expire first); false when it is not (then `removeWhere`).
   */
  removeIfFront(item: T): boolean {
    const traits = item.traits;
    if (traits === undefined || traits.priority === 0) return this.plain.removeIfFront(item);
    const removed = (this.ranked[traits.priority] as ReadyList<T>).removeIfFront(item);
    if (removed) this.rankedLength -= 1;
    return removed;
  }

  /** Removes a ready job from anywhere in its priority (R28); the others keep their order. */
  remove(item: T): void {
    const traits = item.traits;
    if (traits === undefined || traits.priority === 0) {
      this.plain.remove(item);
      return;
    }
    (this.ranked[traits.priority] as ReadyList<T>).remove(item);
    this.rankedLength -= 1;
  }

  /** The earliest tick any ready job became ready, or undefined when empty. */
  oldestReadySince(): number | undefined {
    let oldest = this.plain.oldestReadySince();
    if (this.rankedLength === 0) return oldest;
    for (const list of this.ranked) {
      const since = list?.oldestReadySince();
      if (since !== undefined && (oldest === undefined || since < oldest)) oldest = since;
    }
    return oldest;
  }

  /** In the order they would be handed out: highest priority first, each front first. */
  *values(): IterableIterator<T> {
    for (let priority = MAX_PRIORITY; priority >= 1; priority--) {
      const list = this.ranked[priority];
      if (list !== undefined) yield* list.values();
    }
    yield* this.plain.values();
  }

  /**
   * The jobs held now, in the order of `values`, read lazily: reading the first k passes over
   * none of the others. A job pushed at the back meanwhile (a group member that goes on, R24)
   * is not among them. No job may leave the list, nor be pushed at its front, until the reading
   * ends.
   */
  heldNow(): IterableIterator<T> {
    const counts: number[] = [];
    for (let priority = 1; priority <= MAX_PRIORITY; priority++) {
      counts[priority] = this.ranked[priority]?.length ?? 0;
    }
    return this.readHeld(counts, this.plain.length);
  }

  private *readHeld(counts: readonly number[], plain: number): IterableIterator<T> {
    for (let priority = MAX_PRIORITY; priority >= 1; priority--) {
      const count = counts[priority] as number;
      if (count > 0) yield* firstOf((this.ranked[priority] as ReadyList<T>).values(), count);
    }
    if (plain > 0) yield* firstOf(this.plain.values(), plain);
  }

  /** Removes the jobs `remove` picks; the others keep their order (R30). */
  removeWhere(remove: (item: T) => boolean): void {
    this.plain.removeWhere(remove);
    if (this.rankedLength === 0) return;
    this.rankedLength = 0;
    for (const list of this.ranked) {
      if (list === undefined) continue;
      list.removeWhere(remove);
      this.rankedLength += list.length;
    }
  }

  private band(priority: number): ReadyList<T> {
    this.rankedLength += 1;
    let list = this.ranked[priority];
    if (list === undefined) {
      list = new ReadyList<T>();
      this.ranked[priority] = list;
    }
    return list;
  }
}

/** The first `count` of `items` (a pushed item comes after those held: it is never read). */
function* firstOf<T>(items: Iterator<T>, count: number): IterableIterator<T> {
  for (let left = count; left > 0; left--) {
    const next = items.next();
    if (next.done === true) return;
    yield next.value;
  }
}
