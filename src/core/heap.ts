/** An item that knows its place in one heap, so it can be removed or re-keyed in O(log n). */
export interface HeapItem {
  heapIndex: number;
}

/** Binary min-heap over items that carry their own index (-1 when not in the heap). */
export class IndexedHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  /** Empties the heap; its items no longer count as in it. */
  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items.length = 0;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Removes the item if it is in this heap. */
  remove(item: T): void {
    const index = item.heapIndex;
    if (index < 0 || this.items[index] !== item) return;
    const last = this.items.pop() as T;
    item.heapIndex = -1;
    if (last === item) return;
    this.items[index] = last;
    last.heapIndex = index;
    this.up(index);
    this.down(last.heapIndex);
  }

  /** Restores order after the item's key changed. */
  update(item: T): void {
    this.up(item.heapIndex);
    this.down(item.heapIndex);
  }

  has(item: T): boolean {
    return item.heapIndex >= 0 && this.items[item.heapIndex] === item;
  }

  /** The items in heap order (not sorted); for inspection. */
  values(): readonly T[] {
    return this.items;
  }

  /**
   * The items from least to greatest, read lazily: the first k cost O(k log k), however many
   * the heap holds (sorting them all costs O(n log n) for a page of k). An item is read once its
   * parent was: the least of those whose parent was read is the next. The heap must not change
   * until the reading ends.
   */
  *ascending(): Generator<T, void, undefined> {
    const items = this.items;
    if (items.length === 0) return;
    const less = this.less;
    const before = (a: number, b: number): boolean => less(items[a] as T, items[b] as T);
    // A min-heap of the indices whose parent was read, by their items.
    const next: number[] = [0];
    while (next.length > 0) {
      const index = next[0] as number;
      const last = next.pop() as number;
      if (next.length > 0) {
        next[0] = last;
        siftDown(next, before);
      }
      yield items[index] as T;
      const left = 2 * index + 1;
      if (left < items.length) siftUp(next, left, before);
      if (left + 1 < items.length) siftUp(next, left + 1, before);
    }
  }

  private up(start: number): void {
    const items = this.items;
    let index = start;
    const item = items[index] as T;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex] as T;
      if (!this.less(item, parent)) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = item;
    item.heapIndex = index;
  }

  private down(start: number): void {
    const items = this.items;
    const length = items.length;
    let index = start;
    const item = items[index] as T;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && this.less(items[right] as T, items[left] as T)) child = right;
      const childItem = items[child] as T;
      if (!this.less(childItem, item)) break;
      items[index] = childItem;
      childItem.heapIndex = index;
      index = child;
    }
    items[index] = item;
    item.heapIndex = index;
  }
}

/** Adds `value` to the min-heap `heap` ordered by `before`. */
function siftUp(heap: number[], value: number, before: (a: number, b: number) => boolean): void {
  let index = heap.length;
  heap.push(value);
  while (index > 0) {
    const parentIndex = (index - 1) >> 1;
    const parent = heap[parentIndex] as number;
    if (!before(value, parent)) break;
    heap[index] = parent;
    index = parentIndex;
  }
  heap[index] = value;
}

/** Restores the min-heap `heap` ordered by `before` after its top was replaced. */
function siftDown(heap: number[], before: (a: number, b: number) => boolean): void {
  const length = heap.length;
  const value = heap[0] as number;
  let index = 0;
  for (;;) {
    const left = 2 * index + 1;
    if (left >= length) break;
    const right = left + 1;
    let child = left;
    if (right < length && before(heap[right] as number, heap[left] as number)) child = right;
    const childValue = heap[child] as number;
    if (!before(childValue, value)) break;
    heap[index] = childValue;
    index = child;
  }
  heap[index] = value;
}
