/** Below this many slots past twice those held, the slots are not rebuilt. */
const MIN_COMPACT = 1024;

/**
 * Items in the order of their keys, each added with a key above every key added before (a
 * dead job's place in the order of deaths, a waiting job's group sequence number): O(1) add,
 * and the items after a key read from a binary search, not from the first item (a Map in
 * insertion order is read from its first entry: a page of k after n costs O(n + k); sorting
 * them all costs O(n log n)).
 *
 * An item leaves without a call here (or by `remove`): `held` says whether an item added with
 * a key is still in the order (a job still dead, or waiting, since it was added with that
 * key). A reading that meets one no longer held leaves a hole in its slot, which points on
 * towards the next slot held: later readings pass over holes by those pointers, shortened as
 * they go (path compression), so each item that left is looked at once. The owner says how
 * many items are held after each change (`shrink`): the slots are rebuilt without the others
 * once those are over half of them.
 */
export class KeyedOrder<T> {
  private items: (T | Hole)[] = [];
  private keys: number[] = [];

  /** `held`: whether `item`, added with `key`, is still in the order. */
  constructor(private readonly held: (item: T, key: number) => boolean) {}

  /** The slots, held or not. */
  get slots(): number {
    return this.items.length;
  }

  clear(): void {
    this.items = [];
    this.keys = [];
  }

  /** Adds `item` after every item added; `key` must be above every key added before. */
  add(key: number, item: T): void {
    this.items.push(item);
    this.keys.push(key);
  }

  /**
   * Takes out the item added with `key`, if it is there, for an item that leaves without
   * `held` telling (O(log n)).
   */
  remove(key: number): void {
    const slot = this.firstAbove(key - 1);
    if (this.keys[slot] === key && !(this.items[slot] instanceof Hole)) {
      this.items[slot] = new Hole(slot + 1);
    }
  }

  /** `live` items are held now: the slots are rebuilt without the others once they are many. */
  shrink(live: number): void {
    if (live === 0) this.clear();
    else if (this.items.length > 2 * live + MIN_COMPACT) this.compact();
  }

  /**
   * The items held with a key above `key`, in key order, read lazily. Nothing may be added
   * until the reading ends.
   */
  *after(key: number): IterableIterator<T> {
    let slot = this.heldFrom(this.firstAbove(key));
    while (slot < this.items.length) {
      yield this.items[slot] as T;
      slot = this.heldFrom(slot + 1);
    }
  }

  /** The first slot, held or not, whose key is above `key` (binary search). */
  private firstAbove(key: number): number {
    const keys = this.keys;
    let low = 0;
    let high = keys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((keys[middle] as number) <= key) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * The first slot held from `slot` on (the number of slots when none): holes are passed over
   * by their pointers, an item found no longer held becomes one, and every hole passed then
   * points at the slot found.
   */
  private heldFrom(slot: number): number {
    const items = this.items;
    const length = items.length;
    let found = slot;
    while (found < length) {
      const item = items[found];
      if (item instanceof Hole) found = item.to;
      else if (this.held(item as T, this.keys[found] as number)) break;
      else {
        items[found] = new Hole(found + 1);
        found += 1;
      }
    }
    for (let at = slot; at < found; ) {
      const hole = items[at] as Hole;
      at = hole.to;
      hole.to = found;
    }
    return found;
  }

  /** Keeps only the items held, from slot 0. */
  private compact(): void {
    const items: T[] = [];
    const keys: number[] = [];
    for (let slot = 0; slot < this.items.length; slot++) {
      const item = this.items[slot];
      const key = this.keys[slot] as number;
      if (item instanceof Hole || !this.held(item as T, key)) continue;
      items.push(item as T);
      keys.push(key);
    }
    this.items = items;
    this.keys = keys;
  }
}

/** The slot of an item that left: it points at a later slot, nearer the next one held. */
class Hole {
  constructor(public to: number) {}
}
