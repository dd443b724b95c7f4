import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/core/fifo.js';
import { ReadyList } from '../../src/core/ready-list.js';

/**
 * R14 R24 R28: jobs removed from inside a group's waiting list or the ready list and added again
 * (redriven, put back) while their removed places are still held: a few jobs, each removed and
 * added again many times, at either end, answer as a plain array does.
 */

const POOL = 10;

interface Item {
  readonly name: number;
  availableAt: number;
}

type ListStep =
  | { kind: 'front' | 'back'; x: number; earlier: number }
  | { kind: 'remove' | 'removeIfFront'; x: number }
  | { kind: 'shift' | 'oldest' | 'values' }
  | { kind: 'removeWhere'; every: number };

const listStep: fc.Arbitrary<ListStep> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constantFrom('front' as const, 'back' as const),
      x: fc.nat(POOL - 1),
      earlier: fc.nat(3),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom('remove' as const, 'removeIfFront' as const),
      x: fc.nat(POOL - 1),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('shift' as const, 'oldest' as const, 'values' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('removeWhere' as const),
      every: fc.integer({ min: 2, max: 5 }),
    }),
  },
);

const oldest = (model: Item[]) =>
  model.length === 0 ? undefined : Math.min(...model.map((each) => each.availableAt));

type FifoStep =
  | { kind: 'push' | 'remove'; x: number }
  | { kind: 'shift' | 'pop' | 'first' | 'last' | 'values' };

const fifoStep: fc.Arbitrary<FifoStep> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom('push' as const, 'remove' as const),
      x: fc.nat(POOL - 1),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom(
        'shift' as const,
        'pop' as const,
        'first' as const,
        'last' as const,
        'values' as const,
      ),
    }),
  },
);

describe('R14 R24 R28 removed and added again', () => {
  it('property: a ready list of a few jobs removed and added again at either end answers as an array does', () => {
    fc.assert(
      fc.property(fc.array(listStep, { maxLength: 200, size: 'max' }), (steps) => {
        const items: Item[] = Array.from({ length: POOL }, (_, name) => ({ name, availableAt: 0 }));
        const list = new ReadyList<Item>();
        const model: Item[] = [];
        let clock = 0;
        for (const step of steps) {
          clock += 1;
          if (step.kind === 'front' || step.kind === 'back') {
            const each = items[step.x] as Item;
            if (model.includes(each)) continue;
            if (step.kind === 'front') {
              // Put back at the front at the latest time, as a requeue does.
              each.availableAt = clock;
              list.pushFront(each);
              model.unshift(each);
            } else {
              // At the back at this time or earlier, as a redrive or a promoted delayed job.
              each.availableAt = Math.max(0, clock - step.earlier * 3);
              list.pushBack(each);
              model.push(each);
            }
          } else if (step.kind === 'remove' || step.kind === 'removeIfFront') {
            const each = items[step.x] as Item;
            const index = model.indexOf(each);
            if (index < 0) continue;
            if (step.kind === 'remove') list.remove(each);
            else {
              expect(list.removeIfFront(each)).toBe(index === 0);
              if (index !== 0) continue;
            }
            model.splice(index, 1);
            // Out of the list it may get another time before it comes back.
            each.availableAt = clock + 50;
          } else if (step.kind === 'shift') {
            expect(list.shift()).toBe(model.shift());
          } else if (step.kind === 'oldest') {
            expect(list.oldestReadySince()).toBe(oldest(model));
          } else if (step.kind === 'values') {
            expect([...list.values()]).toEqual(model);
          } else if (step.kind === 'removeWhere') {
            const every = step.every;
            const picked = new Set(model.filter((each) => each.name % every === 0));
            list.removeWhere((each) => picked.has(each));
            for (let i = model.length - 1; i >= 0; i--) {
              if (picked.has(model[i] as Item)) model.splice(i, 1);
            }
          }
          expect(list.length).toBe(model.length);
        }
        expect([...list.values()]).toEqual(model);
        expect(list.oldestReadySince()).toBe(oldest(model));
        const drained: Item[] = [];
        for (let next = list.shift(); next !== undefined; next = list.shift()) drained.push(next);
        expect(drained).toEqual(model);
        expect(list.oldestReadySince()).toBeUndefined();
      }),
      { numRuns: 1_000 },
    );
  });

  it('property: a queue of a few items removed and pushed again answers as an array does', () => {
    fc.assert(
      fc.property(fc.array(fifoStep, { maxLength: 200, size: 'max' }), (steps) => {
        const fifo = new Fifo<number>();
        const model: number[] = [];
        for (const step of steps) {
          if (step.kind === 'push') {
            if (model.includes(step.x)) continue;
            fifo.push(step.x);
            model.push(step.x);
          } else if (step.kind === 'remove') {
            const index = model.indexOf(step.x);
            if (index < 0) continue;
            fifo.remove(step.x);
            model.splice(index, 1);
          } else if (step.kind === 'shift') expect(fifo.shift()).toBe(model.shift());
          else if (step.kind === 'pop') expect(fifo.pop()).toBe(model.pop());
          else if (step.kind === 'first') expect(fifo.first()).toBe(model[0]);
          else if (step.kind === 'last') expect(fifo.last()).toBe(model.at(-1));
          else expect([...fifo.values()]).toEqual(model);
          expect(fifo.length).toBe(model.length);
        }
        expect([...fifo.values()]).toEqual(model);
      }),
      { numRuns: 1_000 },
    );
  });
});
