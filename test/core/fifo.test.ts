import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/core/fifo.js';

/** The slots the queue holds, live or not: what compaction and rebuilding keep bounded. */
function heldSlots(fifo: Fifo<unknown>): number {
  return (fifo as unknown as { items: unknown[] }).items.length;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('Fifo', () => {
  it('hands items out in the order they were pushed, with its length', () => {
    const fifo = new Fifo<number>();
    expect(fifo.shift()).toBeUndefined();
    expect(fifo.first()).toBeUndefined();
    expect(fifo.last()).toBeUndefined();
    for (const n of [1, 2, 3]) fifo.push(n);
    expect(fifo.length).toBe(3);
    expect([fifo.first(), fifo.last()]).toEqual([1, 3]);
    expect(fifo.shift()).toBe(1);
    fifo.push(4);
    expect([...fifo.values()]).toEqual([2, 3, 4]);
    expect(fifo.pop()).toBe(4);
    expect([fifo.shift(), fifo.shift(), fifo.shift()]).toEqual([2, 3, undefined]);
    expect(fifo.length).toBe(0);
  });

  it('keeps order and length across compaction, and holds the consumed slots for a bounded time', () => {
    const fifo = new Fifo<number>();
    let next = 5_000;
    let expected = 0;
    // A long queue drained while it is fed: the consumed front is cut off as it grows.
    for (const n of range(0, next)) fifo.push(n);
    for (let round = 0; round < 8_000; round++) {
      expect(fifo.shift()).toBe(expected++);
      if (round % 2 === 0) fifo.push(next++);
      expect(fifo.length).toBe(next - expected);
      expect(heldSlots(fifo)).toBeLessThanOrEqual(2 * fifo.length + 1026);
    }
    expect(fifo.first()).toBe(expected);
    expect([...fifo.values()]).toEqual(range(expected, next));
    while (fifo.shift() !== undefined) expected++;
    expect(expected).toBe(next);
    expect(heldSlots(fifo)).toBe(0);
  });

  it('removes an item from the head, the tail or inside; the others keep their order', () => {
    const fifo = new Fifo<string>();
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) fifo.push(id);
    fifo.remove('a');
    fifo.remove('f');
    fifo.remove('c');
    expect(fifo.length).toBe(3);
    expect([...fifo.values()]).toEqual(['b', 'd', 'e']);
    expect([fifo.first(), fifo.last()]).toEqual(['b', 'e']);
    fifo.remove('d');
    expect(fifo.shift()).toBe('b');
    expect(fifo.shift()).toBe('e');
    expect(fifo.shift()).toBeUndefined();
    expect(fifo.length).toBe(0);
  });

  it('an item removed from inside and pushed again is held once, at the back', () => {
    const fifo = new Fifo<string>();
    for (const id of ['a', 'b', 'c', 'd']) fifo.push(id);
    fifo.remove('b');
    fifo.push('b');
    expect(fifo.length).toBe(4);
    expect([...fifo.values()]).toEqual(['a', 'c', 'd', 'b']);
    expect([fifo.shift(), fifo.shift(), fifo.shift(), fifo.shift()]).toEqual(['a', 'c', 'd', 'b']);
    expect(fifo.shift()).toBeUndefined();
  });

  it('removed items are passed over by shift, pop, first and last', () => {
    const fifo = new Fifo<number>();
    for (const n of range(0, 10)) fifo.push(n);
    for (const n of [1, 2, 7, 8]) fifo.remove(n);
    expect(fifo.shift()).toBe(0);
    expect(fifo.first()).toBe(3);
    expect(fifo.pop()).toBe(9);
    expect(fifo.last()).toBe(6);
    expect([...fifo.values()]).toEqual([3, 4, 5, 6]);
    expect(fifo.length).toBe(4);
  });

  it('many removals from inside leave a queue no larger than twice its live items', () => {
    const fifo = new Fifo<number>();
    for (const n of range(0, 10_000)) fifo.push(n);
    // Every odd one but the last, from inside: each leaves a mark until the marks are half.
    for (let n = 1; n < 9_999; n += 2) fifo.remove(n);
    expect(fifo.length).toBe(5_001);
    expect(heldSlots(fifo)).toBeLessThanOrEqual(2 * fifo.length);
    expect([...fifo.values()]).toEqual([...range(0, 5_000).map((n) => 2 * n), 9_999]);
  });

  it('property: any sequence of push, shift, pop and remove answers as an array does', () => {
    type Op =
      | { kind: 'push'; count: number }
      | { kind: 'shift' | 'pop' }
      | { kind: 'remove'; at: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), count: fc.integer({ min: 1, max: 600 }) }),
      fc.record({ kind: fc.constantFrom('shift' as const, 'pop' as const) }),
      fc.record({
        kind: fc.constant('remove' as const),
        at: fc.double({ min: 0, max: 0.9999, noNaN: true }),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), fc.boolean(), (ops, readd) => {
        const fifo = new Fifo<number>();
        const model: number[] = [];
        const gone: number[] = [];
        let next = 0;
        for (const step of ops) {
          if (step.kind === 'push') {
            for (let i = 0; i < step.count; i++) {
              // Sometimes an item removed earlier comes back (as a redriven job does).
              const item =
                readd && gone.length > 0 && i % 7 === 0 ? (gone.pop() as number) : next++;
              fifo.push(item);
              model.push(item);
            }
          } else if (step.kind === 'shift') {
            expect(fifo.shift()).toBe(model.shift());
          } else if (step.kind === 'pop') {
            expect(fifo.pop()).toBe(model.pop());
          } else if (step.kind === 'remove' && model.length > 0) {
            const index = Math.floor(step.at * model.length);
            const [item] = model.splice(index, 1);
            fifo.remove(item as number);
            gone.push(item as number);
          }
          expect(fifo.length).toBe(model.length);
          expect(fifo.first()).toBe(model[0]);
          expect(fifo.last()).toBe(model.at(-1));
        }
        expect([...fifo.values()]).toEqual(model);
        expect(heldSlots(fifo)).toBeLessThanOrEqual(2 * model.length + 1026);
      }),
      { numRuns: 200 },
    );
  });
});
