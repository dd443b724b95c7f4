import { describe, expect, it } from 'vitest';
import type { InspectView } from '../../src/core/index.js';
import { CrashHistory } from './crash-history.js';
import { formatLine, type Line, parseLine } from './protocol.js';

/** The checker of the crash rounds must see each kind of loss it is there for. */

function view(parts: Partial<InspectView> = {}): InspectView {
  return { queueTime: 0, ready: [], delayed: [], active: [], dead: [], ...parts };
}

function round(history: CrashHistory, index: number, lines: Line[]): void {
  history.addRound(index, lines, lines.map(formatLine));
}

const publish = (...ids: string[]): Line[] => [
  { kind: 'publishing', ids },
  { kind: 'published', ids },
];
const deliver = (id: string, token: number, deliveryCount = 1): Line => ({
  kind: 'reserved',
  id,
  token,
  deliveryCount,
});
const ack = (id: string, token: number, ok = true): Line[] => [
  { kind: 'acking', id, token },
  { kind: 'acked', id, token, ok },
];
const active = (id: string, token: number, deliveryCount = 1) => ({
  id,
  token,
  deadline: 100,
  deliveryCount,
});

function violations(check: (history: CrashHistory) => void): string {
  const history = new CrashHistory('self-test', 7);
  check(history);
  try {
    history.throwIfViolated();
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('CrashHistory', () => {
  it('accepts a history where every committed job is present or acked', () => {
    const message = violations((history) => {
      round(history, 0, [
        ...publish('a', 'b'),
        ...publish('c'),
        deliver('a', 1),
        ...ack('a', 1),
        deliver('b', 2),
        // in flight at the kill: the ack of b (committed), the publish of d and e (not)
        { kind: 'acking', id: 'b', token: 2 },
        { kind: 'publishing', ids: ['d', 'e'] },
      ]);
      history.checkView(0, view({ ready: ['c'] }));
      round(history, 1, [deliver('c', 3), ...ack('c', 3)]);
      history.checkView(1, view());
    });
    expect(message).toBe('');
  });

  it('finds a lost job, with the lines about it and the seed', () => {
    const message = violations((history) => {
      round(history, 0, [...publish('a'), deliver('a', 1)]);
      history.checkView(0, view());
    });
    expect(message).toMatch(/seed 7/);
    expect(message).toMatch(/I1: a is lost/);
    expect(message).toMatch(/r0 reserved a 1 1/);
  });

  it('does not excuse a loss by an ack of an older delivery in flight', () => {
    const message = violations((history) => {
      round(history, 0, [...publish('a'), deliver('a', 1)]);
      history.checkView(0, view({ active: [active('a', 1)] }));
      round(history, 1, [deliver('a', 2, 2), { kind: 'acking', id: 'a', token: 1 }]);
      history.checkView(1, view());
    });
    expect(message).toMatch(/I1: a is lost/);
  });

  it('finds an acked job that came back, and one delivered again', () => {
    expect(
      violations((history) => {
        round(history, 0, [...publish('a'), deliver('a', 1), ...ack('a', 1)]);
        history.checkView(0, view({ ready: ['a'] }));
      }),
    ).toMatch(/I2: a was acked/);
    expect(
      violations((history) => {
        round(history, 0, [...publish('a'), deliver('a', 1), ...ack('a', 1)]);
        history.checkView(0, view());
        round(history, 1, [deliver('a', 2, 2)]);
      }),
    ).toMatch(/I2: a delivered again/);
  });

  it('finds a batch publish only partly committed', () => {
    const message = violations((history) => {
      round(history, 0, [{ kind: 'publishing', ids: ['a', 'b', 'c'] }]);
      history.checkView(0, view({ ready: ['a', 'b'] }));
    });
    expect(message).toMatch(/R5: a publish of 3 jobs .* only partly there \(2\)/);
  });

  it('finds tokens reused or not above the tokens before a restart', () => {
    expect(
      violations((history) => {
        round(history, 0, [...publish('a', 'b'), deliver('a', 5)]);
        history.checkView(0, view({ ready: ['b'], active: [active('a', 5)] }));
        round(history, 1, [deliver('b', 4)]);
      }),
    ).toMatch(/R6: token 4 \(b\) handed out in r1 is not above 5/);
    expect(
      violations((history) => {
        round(history, 0, [...publish('a', 'b'), deliver('a', 1), deliver('b', 1)]);
      }),
    ).toMatch(/I5: token 1 handed out twice/);
  });

  it('finds a job in two states, an unexpected job and a delivery count that went back', () => {
    const message = violations((history) => {
      round(history, 0, [...publish('a'), deliver('a', 1, 3)]);
      history.checkView(0, view({ ready: ['a', 'x'], active: [active('a', 1, 2)] }));
    });
    expect(message).toMatch(/a is both ready and active/);
    expect(message).toMatch(/unexpected job x/);
    expect(message).toMatch(/I7: a is stored with deliveryCount 2/);
  });

  it('finds a stale token that completed a newer delivery', () => {
    const message = violations((history) => {
      round(history, 0, [...publish('a'), deliver('a', 1), deliver('a', 2, 2), ...ack('a', 1)]);
      history.checkView(0, view());
    });
    expect(message).toMatch(/R8: a acked with token 1, but token 2/);
  });
});

describe('the line protocol', () => {
  it('reads back what it writes, and refuses torn lines', () => {
    const lines: Line[] = [
      { kind: 'ready' },
      { kind: 'published', ids: ['r0-1', 'r0-2'] },
      { kind: 'reserved', id: 'r0-1', token: 12, deliveryCount: 2 },
      { kind: 'acked', id: 'r0-1', token: 12, ok: false },
      { kind: 'delivery', id: 'j1', token: 3, reservedAt: 10, ackedAt: 12, ok: true },
    ];
    expect(lines.map((line) => parseLine(formatLine(line)))).toEqual(lines);
    expect(() => parseLine('reserved r0-1 1')).toThrow(/bad line/);
    expect(() => parseLine('acked r0-1 12 tr')).toThrow(/bad line/);
  });
});
