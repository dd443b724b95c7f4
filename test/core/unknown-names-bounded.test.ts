import { describe, expect, it } from 'vitest';
import { build, parseOperation, ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';

// An unknown name is refused whatever it is; what the error echoes of it is bounded: each name
// cut to its first 64 characters (saying how long it was), at most 10 named, the rest counted.

// biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
const bad = (value: unknown): any => value;

function refusal(call: () => unknown): ValidationError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

const LONG = `${'n'.repeat(64)}${'x'.repeat(999_936)}`;
const manyNames = (count: number, prefix = 'field') =>
  Object.fromEntries(Array.from({ length: count }, (_, n) => [`${prefix}${n}`, 1]));

describe('errors about unknown names echo a bounded part of them', () => {
  it('a field name of a million characters is shown by its first 64 and its length', () => {
    const error = refusal(() => parseOperation({ type: 'stats', [LONG]: 1 }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toBe(
      `unknown field "${'n'.repeat(64)}…" (1,000,000 characters) of stats`,
    );
  });

  it('thousands of unknown fields: the first 10 named, the rest counted', () => {
    const error = refusal(() => parseOperation({ type: 'stats', ...manyNames(5000) }));
    expect(error.issues).toEqual([
      ...Array.from({ length: 10 }, (_, n) => `unknown field "field${n}" of stats`),
      'and 4,990 more unknown fields',
    ]);
    expect(error.message.length).toBeLessThan(1000);
  });

  it('the count spans the jobs of a publish, and the other problems are still all named', () => {
    const jobs = [...Array.from({ length: 3000 }, () => ({ a: 1 })), { id: 7, b: 1 }];
    const error = refusal(() => parseOperation({ type: 'publish', jobs }));
    expect(error.issues.slice(0, 10)).toEqual(
      Array.from({ length: 10 }, (_, n) => `unknown field "a" of jobs[${n}]`),
    );
    expect(error.issues).toContain('and 2,991 more unknown fields');
    expect(error.issues).toContain('jobs[3000].id must be a string of 1 to 256 characters, got 7');
    expect(error.issues).toHaveLength(12);
  });

  it('one unknown past the first 10 is said so', () => {
    const error = refusal(() => build.reserve(bad(manyNames(11))));
    expect(error.issues.at(-1)).toBe('and 1 more unknown field');
  });

  it('through the library: a receive, publish, queue or inspect of many or long unknown names', async () => {
    const broker = await open('memory:');
    try {
      const queue = await broker.queue('jobs', { visibility: 60_000 });
      const receive = await queue.receive(bad(manyNames(5000))).catch((error: unknown) => error);
      expect(receive).toBeInstanceOf(ValidationError);
      expect((receive as ValidationError).message).toContain('and 4,990 more unknown fields');
      expect((receive as ValidationError).message.length).toBeLessThan(1000);
      const publish = await queue.publish(bad({ [LONG]: 1 })).catch((error: unknown) => error);
      expect((publish as ValidationError).code).toBe('INVALID_ARGUMENT');
      expect((publish as ValidationError).message).toBe(
        `unknown field "${'n'.repeat(64)}…" (1,000,000 characters) of job`,
      );
      const created = await broker.queue('other', bad(manyNames(5000, 'o'))).catch((e) => e);
      expect((created as ValidationError).message).toContain(
        'and 4,990 more unknown queue options',
      );
      const named = await broker.queue('named', bad({ [LONG]: 1 })).catch((e) => e);
      expect((named as ValidationError).message).toBe(
        `unknown queue option "${'n'.repeat(64)}…" (1,000,000 characters)`,
      );
      const inspect = await queue.inspect(bad(manyNames(100, 'i'))).catch((e) => e);
      expect((inspect as ValidationError).issues).toHaveLength(11);
      expect((inspect as ValidationError).issues.at(-1)).toBe(
        'and 90 more unknown inspect options',
      );
      expect(await queue.stats()).toMatchObject({ published: 0 });
    } finally {
      await broker.close();
    }
  });
});
