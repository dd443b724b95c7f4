import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IndexedHeap } from '../../src/core/heap.js';
import { KeyedOrder } from '../../src/core/keyed-order.js';

/**
 * The ordered reads behind paged lists: a heap read in order from its least item, lazily, and
 * a keyed order read from after a key. Each gives what sorting everything held gives.
 */

interface Item {
  key: number;
  heapIndex: number;
}

/** The first `count` of `items`. */
function first<T>(items: Iterable<T>, count: number): T[] {
  const taken: T[] = [];
  if (count === 0) return taken;
  for (const item of items) {
    taken.push(item);
    if (taken.length === count) break;
  }
  return taken;
}

describe('IndexedHeap ascending', () => {
  it('reads the items least first, as a sort of them all, after pushes, removals and new keys', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ push: fc.integer({ min: 0, max: 30 }) }),
            fc.record({ remove: fc.nat() }),
            fc.record({ rekey: fc.nat(), key: fc.integer({ min: 0, max: 30 }) }),
            fc.record({ pop: fc.constant(true) }),
          ),
          { maxLength: 200 },
        ),
        fc.nat({ max: 40 }),
        (steps, count) => {
          // Ties broken by when each was made, as the queue breaks them by publish order.
          const made = new Map<Item, number>();
          const less = (a: Item, b: Item) =>
            a.key < b.key || (a.key === b.key && (made.get(a) as number) < (made.get(b) as number));
          const heap = new IndexedHeap<Item>(less);
          const held: Item[] = [];
          for (const step of steps) {
            if ('push' in step) {
              const item = { key: step.push, heapIndex: -1 };
              made.set(item, made.size);
              heap.push(item);
              held.push(item);
            } else if ('remove' in step && held.length > 0) {
              const [item] = held.splice(step.remove % held.length, 1);
              heap.remove(item as Item);
            } else if ('rekey' in step && held.length > 0) {
              const item = held[step.rekey % held.length] as Item;
              item.key = step.key;
              heap.update(item);
            } else if ('pop' in step) {
              const popped = heap.pop();
              if (popped !== undefined) held.splice(held.indexOf(popped), 1);
            }
          }
          const sorted = [...held].sort((a, b) => (less(a, b) ? -1 : 1));
          expect([...heap.ascending()]).toEqual(sorted);
          expect(first(heap.ascending(), count)).toEqual(sorted.slice(0, count));
          // Reading changes nothing.
          expect([...heap.ascending()]).toEqual(sorted);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads the least 10 of 100,000 with a few hundred comparisons', () => {
    let comparisons = 0;
    const heap = new IndexedHeap<Item>((a, b) => {
      comparisons += 1;
      return a.key < b.key;
    });
    // Pushed greatest first: each goes to the top; the array holds them in no useful order.
    for (let key = 100_000; key > 0; key--)
      heap.push({ key: (key * 7919) % 100_003, heapIndex: -1 });
    comparisons = 0;
    const least = first(heap.ascending(), 10).map((item) => item.key);
    const all = [...heap.values()].map((item) => item.key).sort((a, b) => a - b);
    expect(least).toEqual(all.slice(0, 10));
    // Sorting them all compared some 1,700,000 pairs.
    expect(comparisons).toBeLessThanOrEqual(300);
  });
});

describe('KeyedOrder', () => {
  /** An item that says itself whether it is still in the order, as a job's state does. */
  interface Entry {
    key: number;
    held: boolean;
  }

  /** A keyed order of entries, counting how often it asks whether one is held. */
  function entries(): { order: KeyedOrder<Entry>; asked: { count: number } } {
    const asked = { count: 0 };
    const order = new KeyedOrder<Entry>((entry, key) => {
      asked.count += 1;
      return entry.held && entry.key === key;
    });
    return { order, asked };
  }

  it('reads the items after any key in key order, as the list of those held', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            { weight: 4, arbitrary: fc.record({ add: fc.integer({ min: 1, max: 3 }) }) },
            { weight: 2, arbitrary: fc.record({ leave: fc.nat() }) },
            { weight: 1, arbitrary: fc.record({ remove: fc.nat() }) },
            {
              weight: 2,
              arbitrary: fc.record({ after: fc.nat({ max: 400 }), count: fc.nat({ max: 5 }) }),
            },
          ),
          { maxLength: 300 },
        ),
        (steps) => {
          const { order } = entries();
          const held: Entry[] = [];
          let key = 0;
          const check = (after: number, count: number) => {
            const expected = held.filter((entry) => entry.key > after);
            expect(first(order.after(after), count)).toEqual(expected.slice(0, count));
            expect([...order.after(after)]).toEqual(expected);
          };
          for (const step of steps) {
            if ('add' in step) {
              key += step.add;
              const entry = { key, held: true };
              order.add(key, entry);
              held.push(entry);
            } else if ('leave' in step && held.length > 0) {
              // Leaves without a call: the order finds out when it meets it.
              const [left] = held.splice(step.leave % held.length, 1);
              (left as Entry).held = false;
            } else if ('remove' in step && held.length > 0) {
              const [removed] = held.splice(step.remove % held.length, 1);
              order.remove((removed as Entry).key);
            } else if ('after' in step) {
              check(step.after % (key + 2), step.count);
            }
            order.shrink(held.length);
          }
          check(0, held.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps its order through the rebuilds of a long list, and holds a bounded number of slots', () => {
    const { order } = entries();
    const held = new Map<number, Entry>();
    let key = 0;
    for (let round = 0; round < 20_000; round++) {
      key += 2;
      const entry = { key, held: true };
      order.add(key, entry);
      held.set(key, entry);
      // Two of every three leave, from near the front and from anywhere: holes everywhere.
      if (round % 3 !== 0) {
        const leaving = round % 2 === 0 ? first(held.keys(), 1)[0] : key - 2 * (round % 50);
        const left = held.get(leaving as number);
        if (left !== undefined) {
          left.held = false;
          held.delete(left.key);
        }
      }
      order.shrink(held.size);
      expect(order.slots).toBeLessThanOrEqual(2 * held.size + 1_024);
    }
    const sorted = [...held.values()].sort((a, b) => a.key - b.key);
    expect([...order.after(0)]).toEqual(sorted);
    for (const after of [1, 1_001, 20_000, 39_999, key]) {
      expect(first(order.after(after), 5)).toEqual(sorted.filter((e) => e.key > after).slice(0, 5));
    }
  });

  it('looks at each item that left once, however often the items after it are read', () => {
    const { order, asked } = entries();
    const all = Array.from({ length: 10_000 }, (_, i) => ({ key: i + 1, held: true }));
    for (const entry of all) order.add(entry.key, entry);
    // All but the last ten leave unseen: 9,990 holes before the first item held.
    for (const entry of all.slice(0, 9_990)) entry.held = false;
    asked.count = 0;
    for (let read = 0; read < 1_000; read++) {
      expect(first(order.after(read % 5), 3)).toEqual(all.slice(9_990, 9_993));
    }
    // Without the holes pointing on, each read asked of all 9,990 again: 10,000,000 in all.
    expect(asked.count).toBeLessThanOrEqual(9_990 + 1_000 * 3);
    // And the holes passed point at the first slot held: a read passes over them in one step.
    const slots = (order as unknown as { items: ({ to: number } | Entry)[] }).items;
    expect(slots.slice(0, 9_990).every((slot) => 'to' in slot && slot.to === 9_990)).toBe(true);
  });
});
