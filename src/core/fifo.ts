/** Below this many consumed slots the array is not cut: a short queue is not worth copying. */
const MIN_COMPACT = 1024;

/**
 * A first-in first-out queue of distinct items: O(1) amortised push, shift, pop and removal of
 * any item. An Array's own `shift` moves every item left (O(n) once the array is large), so
 * draining n items by it is O(n²); this one reads from a head index and cuts the consumed part
 * off once it is over half the array.
 *
 * `remove` leaves the item where it is, marked: it is passed over wherever it is met, and the
 * array is rebuilt without the marked items once they are half of what it holds, or when a
 * marked item is pushed again (so an item is never held twice).
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  /** Items removed from inside, still held in `items`; undefined while there are none. */
  private removed: Set<T> | undefined;

  get length(): number {
    return this.items.length - this.head - (this.removed?.size ?? 0);
  }

  clear(): void {
    this.items = [];
    this.head = 0;
    this.removed = undefined;
  }

  push(item: T): void {
    if (this.removed?.has(item) === true) this.rebuild();
    this.items.push(item);
  }

  /** Takes the first item. */
  shift(): T | undefined {
    this.dropRemovedAtHead();
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head] as T;
    this.items[this.head] = undefined;
    this.head += 1;
    this.compact();
    return item;
  }

  /** Takes the last item. */
  pop(): T | undefined {
    this.dropRemovedAtTail();
    if (this.head >= this.items.length) return undefined;
    const item = this.items.pop() as T;
    this.compact();
    return item;
  }

  first(): T | undefined {
    this.dropRemovedAtHead();
    return this.items[this.head];
  }

  last(): T | undefined {
    this.dropRemovedAtTail();
    return this.head < this.items.length ? this.items[this.items.length - 1] : undefined;
  }

  /** Removes `item`, which must be in the queue; the others keep their order. */
  remove(item: T): void {
    if (this.first() === item) {
      this.shift();
      return;
    }
    if (this.last() === item) {
      this.pop();
      return;
    }
    if (this.removed === undefined) this.removed = new Set();
    this.removed.add(item);
    if (this.removed.size * 2 >= this.items.length - this.head) this.rebuild();
  }

  /** First to last. */
  *values(): IterableIterator<T> {
    const removed = this.removed;
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i] as T;
      if (removed === undefined || !removed.has(item)) yield item;
    }
  }

  private dropRemovedAtHead(): void {
    const removed = this.removed;
    if (removed === undefined) return;
    while (this.head < this.items.length && removed.delete(this.items[this.head] as T)) {
      this.items[this.head] = undefined;
      this.head += 1;
    }
    if (removed.size === 0) this.removed = undefined;
    this.compact();
  }

  private dropRemovedAtTail(): void {
    const removed = this.removed;
    if (removed === undefined) return;
    while (
      this.items.length > this.head &&
      removed.delete(this.items[this.items.length - 1] as T)
    ) {
      this.items.pop();
    }
    if (removed.size === 0) this.removed = undefined;
    this.compact();
  }

  /** Holds only the live items, from index 0. */
  private rebuild(): void {
    this.items = Array.from(this.values());
    this.head = 0;
    this.removed = undefined;
  }

  /** Cuts off the consumed slots once they are over half of the array (amortised O(1)). */
  private compact(): void {
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head > MIN_COMPACT && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
