/** Below this many consumed slots the array is not cut: a short queue is not worth copying. */
const MIN_COMPACT = 1024;

/**
 * A first-in first-out queue of distinct items: O(1) amortised push, shift, pop and removal of
 * any item. An Array's own `shift` moves every item left (O(n) once the array is large), so
 * draining n items by it is O(n²); this one reads from a head index and cuts the consumed part
 * off once it is over half the array.
 *
 * `remove` leaves the item where it is, marked: it is passed over wherever it is met, and the
 * array is rebuilt without the marked items once they are half of what it holds. An item
 * removed and pushed again is held twice until its marked copy is passed over: its marked
 * copies always come before the one pushed again, so each copy is told apart by where it is met
 * (rebuilding instead would make a remove and push again O(n) each time).
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  /** Items with removed copies still held in `items`; undefined while there are none. */
  private removed: Map<T, RemovedCopies> | undefined;
  /** The removed copies held, all items together. */
  private removedCount = 0;

  get length(): number {
    return this.items.length - this.head - this.removedCount;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
    this.removed = undefined;
    this.removedCount = 0;
  }

  /** Adds `item`, which must not be in the queue, at the back. */
  push(item: T): void {
    const copies = this.removed?.get(item);
    if (copies !== undefined) copies.pushedAgain = true;
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
    // Its removed copies, if any, stay before it: none of it is in the queue now.
    const copies = this.removed?.get(item);
    if (copies !== undefined) copies.pushedAgain = false;
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
    if (this.removed === undefined) this.removed = new Map();
    const copies = this.removed.get(item);
    if (copies === undefined) this.removed.set(item, { count: 1, pushedAgain: false });
    else {
      copies.count += 1;
      copies.pushedAgain = false;
    }
    this.removedCount += 1;
    if (this.removedCount * 2 >= this.items.length - this.head) this.rebuild();
  }

  /** First to last. */
  *values(): IterableIterator<T> {
    const removed = this.removed;
    // The copies met so far of items with removed copies: the one after them is in the queue.
    const met = removed === undefined ? undefined : new Map<T, number>();
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i] as T;
      const copies = removed?.get(item);
      if (copies === undefined) {
        yield item;
        continue;
      }
      const before = met?.get(item) ?? 0;
      met?.set(item, before + 1);
      if (before === copies.count) yield item;
    }
  }

  /** Passes over removed copies at the head: an item's first copy held is removed if any is. */
  private dropRemovedAtHead(): void {
    const removed = this.removed;
    if (removed === undefined) return;
    while (this.head < this.items.length) {
      const item = this.items[this.head] as T;
      if (!this.dropCopy(removed, item)) break;
      this.items[this.head] = undefined;
      this.head += 1;
    }
    this.compact();
  }

  /** Passes over removed copies at the tail: an item's last copy is removed unless pushed again. */
  private dropRemovedAtTail(): void {
    const removed = this.removed;
    if (removed === undefined) return;
    while (this.items.length > this.head) {
      const item = this.items[this.items.length - 1] as T;
      if (removed.get(item)?.pushedAgain !== false || !this.dropCopy(removed, item)) break;
      this.items.pop();
    }
    this.compact();
  }

  /** Counts off one removed copy of `item`; false when it has none. */
  private dropCopy(removed: Map<T, RemovedCopies>, item: T): boolean {
    const copies = removed.get(item);
    if (copies === undefined) return false;
    copies.count -= 1;
    this.removedCount -= 1;
    if (copies.count === 0) removed.delete(item);
    if (this.removedCount === 0) this.removed = undefined;
    return true;
  }

  /** Holds only the items in the queue, from index 0. */
  private rebuild(): void {
    this.items = Array.from(this.values());
    this.head = 0;
    this.removed = undefined;
    this.removedCount = 0;
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

/** The removed copies of one item still held, and whether it was pushed again after them. */
interface RemovedCopies {
  count: number;
  pushedAgain: boolean;
}
