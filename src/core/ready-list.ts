/** What the ready list needs of a job: the tick it became ready. */
export interface ReadyEntry {
  availableAt: number;
}

/**
 * The ready jobs, front first, with O(1) insertion at both ends, removal at the front, and
 * the earliest `availableAt` (for the oldest-ready-age gauge).
 *
 * Held as two parts: `front`, a stack of jobs put back at the front (newest on top), and
 * `back`, a FIFO of jobs appended at the back. The list reads top-of-stack … bottom, then the
 * FIFO. Front insertions always carry the latest time, so the stack's bottom is its oldest;
 * the FIFO keeps a monotonic minimum queue because promoted delayed jobs may carry earlier
 * `availableAt` than jobs appended before them. Of the jobs with one `availableAt` it keeps the
 * last appended (the earlier ones leave first), so a publish of many jobs at one tick adds one
 * entry to it, not one per job.
 */
export class ReadyList<T extends ReadyEntry> {
  private readonly front: T[] = [];
  private back: T[] = [];
  private backHead = 0;
  private backMin: T[] = [];
  private backMinHead = 0;

  get length(): number {
    return this.front.length + this.back.length - this.backHead;
  }

  /** Empties the list. */
  clear(): void {
    this.front.length = 0;
    this.back = [];
    this.backHead = 0;
    this.backMin = [];
    this.backMinHead = 0;
  }

  pushFront(item: T): void {
    this.front.push(item);
  }

  pushBack(item: T): void {
    this.back.push(item);
    const mins = this.backMin;
    while (
      mins.length > this.backMinHead &&
      (mins[mins.length - 1] as T).availableAt >= item.availableAt
    ) {
      mins.pop();
    }
    mins.push(item);
  }

  shift(): T | undefined {
    const fromFront = this.front.pop();
    if (fromFront !== undefined) return fromFront;
    if (this.backHead >= this.back.length) return undefined;
    const item = this.back[this.backHead] as T;
    this.back[this.backHead] = undefined as unknown as T;
    this.backHead += 1;
    if (this.backMin[this.backMinHead] === item) {
      this.backMin[this.backMinHead] = undefined as unknown as T;
      this.backMinHead += 1;
    }
    this.compact();
    return item;
  }

  /** Removes `item` if it is the front (O(1)); false when it is not. */
  removeIfFront(item: T): boolean {
    const top =
      this.front.length > 0 ? this.front[this.front.length - 1] : this.back[this.backHead];
    if (top !== item) return false;
    this.shift();
    return true;
  }

  /** The earliest tick any ready job became ready, or undefined when empty. */
  oldestReadySince(): number | undefined {
    const bottom = this.front[0];
    const backOldest = this.backMin[this.backMinHead];
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
    for (let i = this.front.length - 1; i >= 0; i--) yield this.front[i] as T;
    for (let i = this.backHead; i < this.back.length; i++) yield this.back[i] as T;
  }

  private compact(): void {
    if (this.backHead > 1024 && this.backHead * 2 > this.back.length) {
      this.back = this.back.slice(this.backHead);
      this.backHead = 0;
    }
    if (this.backMinHead > 1024 && this.backMinHead * 2 > this.backMin.length) {
      this.backMin = this.backMin.slice(this.backMinHead);
      this.backMinHead = 0;
    }
  }
}
