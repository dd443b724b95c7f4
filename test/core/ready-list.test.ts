import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReadyList } from '../../src/core/ready-list.js';

interface Item {
  readonly name: string;
  availableAt: number;
}

const item = (name: string, availableAt: number): Item => ({ name, availableAt });
const names = (list: ReadyList<Item>) => Array.from(list.values(), (each) => each.name);

describe('ReadyList remove', () => {
  it('takes an item out of the front stack or the back; the others keep their order', () => {
    const list = new ReadyList<Item>();
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((name) => item(name, 5)) as Item[];
    for (const each of [c, d, e] as Item[]) list.pushBack(each);
    list.pushFront(b as Item);
    list.pushFront(a as Item);
    expect(names(list)).toEqual(['a', 'b', 'c', 'd', 'e']);
    list.remove(b as Item);
    list.remove(d as Item);
    expect(list.length).toBe(3);
    expect(names(list)).toEqual(['a', 'c', 'e']);
    expect(list.shift()).toBe(a);
    expect(list.shift()).toBe(c);
    expect(list.shift()).toBe(e);
    expect(list.shift()).toBeUndefined();
    expect(list.length).toBe(0);
  });

  it('the oldest-ready time leaves out a removed item that held it', () => {
    const list = new ReadyList<Item>();
    const late = item('late', 9);
    const early = item('early', 3);
    // A promoted delayed job can be earlier than one appended before it.
    list.pushBack(late);
    list.pushBack(early);
    list.pushBack(item('last', 10));
    expect(list.oldestReadySince()).toBe(3);
    list.remove(early);
    expect(list.oldestReadySince()).toBe(9);
    list.remove(late);
    expect(list.oldestReadySince()).toBe(10);
  });

  it('the oldest-ready time holds when a removed item changes its time before it is added again', () => {
    const list = new ReadyList<Item>();
    const arrived = item('arrived', 5);
    const promoted = item('promoted', 3);
    // `arrived` came from a queue whose clock was ahead; `promoted` was delayed until 3.
    list.pushBack(arrived);
    list.pushBack(promoted);
    list.remove(promoted);
    // Out of the list it is given a new time (redriven into a group, where it waits).
    promoted.availableAt = 50;
    list.pushBack(item('next', 10));
    expect(list.oldestReadySince()).toBe(5);
  });

  it('an item removed from inside and added again is held once, where it was added', () => {
    const list = new ReadyList<Item>();
    const items = ['a', 'b', 'c'].map((name) => item(name, 1)) as Item[];
    for (const each of items) list.pushBack(each);
    list.remove(items[1] as Item);
    list.pushBack(items[1] as Item);
    expect(names(list)).toEqual(['a', 'c', 'b']);
    expect(list.length).toBe(3);
    expect(list.removeIfFront(items[0] as Item)).toBe(true);
    expect(list.removeIfFront(items[1] as Item)).toBe(false);
  });

  it('thousands of removals from inside keep order, length and the oldest-ready time', () => {
    const list = new ReadyList<Item>();
    const items = Array.from({ length: 6_000 }, (_, i) => item(`j${i}`, i));
    for (const each of items) list.pushBack(each);
    for (let i = 1; i < 6_000; i += 3) list.remove(items[i] as Item);
    for (let i = 2; i < 6_000; i += 3) list.remove(items[i] as Item);
    const left = items.filter((_, i) => i % 3 === 0);
    expect(list.length).toBe(left.length);
    expect(names(list)).toEqual(left.map((each) => each.name));
    expect(list.oldestReadySince()).toBe(0);
    list.remove(items[0] as Item);
    expect(list.oldestReadySince()).toBe(3);
    const drained: Item[] = [];
    for (let next = list.shift(); next !== undefined; next = list.shift()) drained.push(next);
    expect(drained).toEqual(left.slice(1));
  });

  it('property: any sequence of calls answers as a plain array of the ready items does', () => {
    type Op =
      | { kind: 'front'; count: number }
      | { kind: 'back'; earlier: number[] }
      | { kind: 'shift' | 'oldest' }
      | { kind: 'remove' | 'removeIfFront' | 'readd'; at: number }
      | { kind: 'removeWhere'; every: number };
    const at = fc.double({ min: 0, max: 0.9999, noNaN: true });
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('front' as const), count: fc.integer({ min: 1, max: 40 }) }),
      fc.record({
        kind: fc.constant('back' as const),
        earlier: fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 40 }),
      }),
      fc.record({ kind: fc.constantFrom('shift' as const, 'oldest' as const) }),
      fc.record({ kind: fc.constantFrom('remove' as const, 'removeIfFront' as const), at }),
      fc.record({ kind: fc.constant('readd' as const), at }),
      fc.record({
        kind: fc.constant('removeWhere' as const),
        every: fc.integer({ min: 2, max: 9 }),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const list = new ReadyList<Item>();
        const model: Item[] = [];
        const gone: Item[] = [];
        let clock = 0;
        let next = 0;
        for (const step of ops) {
          clock += 1;
          switch (step.kind) {
            case 'front':
              // Put back at the front at the latest time, as a requeue does.
              for (let i = 0; i < step.count; i++) {
                const each = item(`j${next++}`, clock);
                list.pushFront(each);
                model.unshift(each);
              }
              break;
            case 'back':
              // At the back at this time or earlier, as a publish or a promoted delayed job.
              for (const earlier of step.earlier) {
                const each = item(`j${next++}`, Math.max(0, clock - earlier));
                list.pushBack(each);
                model.push(each);
              }
              break;
            case 'shift':
              expect(list.shift()).toBe(model.shift());
              break;
            case 'oldest': {
              const oldest =
                model.length === 0 ? undefined : Math.min(...model.map((m) => m.availableAt));
              expect(list.oldestReadySince()).toBe(oldest);
              break;
            }
            case 'remove':
            case 'removeIfFront': {
              if (model.length === 0) break;
              const index = Math.floor(step.at * model.length);
              const each = model[index] as Item;
              if (step.kind === 'remove') list.remove(each);
              else if (!list.removeIfFront(each)) {
                expect(index).not.toBe(0);
                break;
              }
              model.splice(index, 1);
              gone.push(each);
              break;
            }
            case 'readd': {
              // A removed item gets a new time (a redriven job), and half the time comes back
              // at the back at once; the others wait (as in a group) and may come back later.
              if (gone.length === 0) break;
              const index = Math.floor(step.at * gone.length);
              const each = gone[index] as Item;
              each.availableAt = clock;
              if (step.at < 0.5) break;
              gone.splice(index, 1);
              list.pushBack(each);
              model.push(each);
              break;
            }
            case 'removeWhere': {
              const picked = new Set(model.filter((_, i) => i % step.every === 0));
              list.removeWhere((each) => picked.has(each));
              for (let i = model.length - 1; i >= 0; i--) {
                if (picked.has(model[i] as Item)) gone.push(...model.splice(i, 1));
              }
              break;
            }
          }
          expect(list.length).toBe(model.length);
        }
        expect(Array.from(list.values())).toEqual(model);
        const oldest =
          model.length === 0 ? undefined : Math.min(...model.map((m) => m.availableAt));
        expect(list.oldestReadySince()).toBe(oldest);
      }),
      { numRuns: 300 },
    );
  });
});
