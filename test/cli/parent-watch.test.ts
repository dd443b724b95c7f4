import { describe, expect, it } from 'vitest';
import { ParentWatch, startedByNpm } from '../../src/cli/parent-watch.js';

describe('ParentWatch', () => {
  it('calls onGone once, when the parent pid changes (the process was orphaned)', () => {
    let parent = 4242;
    let calls = 0;
    const watch = new ParentWatch(
      () => {
        calls += 1;
      },
      () => parent,
    );
    expect(watch.runOnce()).toBe(false);
    expect(calls).toBe(0);
    parent = 1;
    expect(watch.runOnce()).toBe(true);
    expect(watch.runOnce()).toBe(true);
    expect(calls).toBe(1);
  });

  it('is on only under npm scripts and npx (npm_lifecycle_event set)', () => {
    expect(startedByNpm({ npm_lifecycle_event: 'start' })).toBe(true);
    expect(startedByNpm({ npm_lifecycle_event: 'npx' })).toBe(true);
    expect(startedByNpm({})).toBe(false);
  });
});
