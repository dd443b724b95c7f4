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
