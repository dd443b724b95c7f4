import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * A dependency whose own `engines` refuses a Node version leaseq's admits makes npm warn
 * `EBADENGINE` on that version, and an install that enforces engines (npm's `engine-strict`,
 * Yarn 1) fail there: the README's paragraph on `EBADENGINE` names each such package of what
 * `npm install leaseq` gets (package-lock.json without the development ones), and no other.
 */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

type Version = [number, number, number];

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * Whether `range` admits `version`, for the ranges packages write in `engines`: alternatives
 * joined by `||`, each comparators (`>=`, `>`, `<=`, `<`, `=`, `^`, `~`, none) of versions that
 * may stop short or end in `x` (`>= 10.x`, `^16`, `20.x`). Another form throws.
 */
function admits(range: string, version: Version): boolean {
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .every((comparator) => {
        const match = /^(>=|<=|>|<|=|\^|~)?v?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$/.exec(comparator);
        if (match === null) throw new Error(`a range this test does not read: ${range}`);
        const [, op = '', major, minor, patch] = match;
        const given = [major, minor, patch].filter((part) => part !== undefined && part !== 'x');
        const from = [0, 1, 2].map((index) => Number(given[index] ?? 0)) as Version;
        // The first version past every one the partial version names: 20.x → 21.0.0.
        const past = (index: number): Version => {
          const next = [...from] as Version;
          next[index] = (next[index] ?? 0) + 1;
          for (let rest = index + 1; rest < 3; rest++) next[rest] = 0;
          return next;
        };
        const wholeUpTo = past(Math.max(0, given.length - 1));
        const order = compare(version, from);
        switch (op) {
          case '>=':
            return order >= 0;
          case '>':
            return given.length === 3 ? order > 0 : compare(version, wholeUpTo) >= 0;
          case '<':
            return order < 0;
          case '<=':
            return given.length === 3 ? order <= 0 : compare(version, wholeUpTo) < 0;
          case '^': {
            const first = from.findIndex((part, index) => part !== 0 || index === given.length - 1);
            return order >= 0 && compare(version, past(Math.max(0, first))) < 0;
          }
          case '~':
            return order >= 0 && compare(version, past(given.length > 1 ? 1 : 0)) < 0;
          default:
            return order >= 0 && compare(version, wholeUpTo) < 0;
        }
      }),
  );
}

/** The lowest version of each major up to `lastMajor` that `range` admits (`^X.Y.Z`, `>=X.Y.Z`). */
function lowestByMajor(range: string, lastMajor: number): Version[] {
  return range.split('||').flatMap((part) => {
    const match = /^(\^|>=)(\d+)\.(\d+)\.(\d+)$/.exec(part.trim());
    if (match === null) throw new Error(`a range this test does not read: ${part.trim()}`);
    const [, op, major, minor, patch] = match;
    const from: Version = [Number(major), Number(minor), Number(patch)];
    const lowest: Version[] = [from];
    if (op === '>=')
      for (let next = from[0] + 1; next <= lastMajor; next++) lowest.push([next, 0, 0]);
    return lowest;
  });
}

describe('the engines of the dependencies a project installs with leaseq', () => {
  it('reads the ranges packages write', () => {
    expect(admits('>=22', [20, 19, 0])).toBe(false);
    expect(admits('>=22', [22, 0, 0])).toBe(true);
    expect(admits('>= 10.x', [20, 19, 0])).toBe(true);
    expect(admits('^16 || ^18 || >=20', [17, 0, 0])).toBe(false);
    expect(admits('^16 || ^18 || >=20', [20, 19, 0])).toBe(true);
    expect(admits('20.x || 22.x', [22, 12, 0])).toBe(true);
    expect(admits('20.x || 22.x', [23, 0, 0])).toBe(false);
    expect(admits('>=20 <22', [22, 0, 0])).toBe(false);
    expect(admits('~1.2.3', [1, 3, 0])).toBe(false);
    expect(() => admits('latest', [20, 0, 0])).toThrow(/does not read/);
  });

  it('the README names each one that refuses a Node version engines admits, and no other', () => {
    const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { dev?: boolean; engines?: { node?: string } }>;
    };
    const admitted = lowestByMajor(pkg.engines.node, 30);
    const installed = new Map<string, string | undefined>();
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === '' || entry.dev === true) continue;
      installed.set(path.replace(/^.*node_modules\//, ''), entry.engines?.node);
    }
    expect(installed.has('fastify')).toBe(true);
    const refusing = [...installed]
      .filter(([, range]) => range !== undefined && admitted.some((v) => !admits(range, v)))
      .map(([name]) => name)
      .sort();
    const paragraph =
      read('README.md')
        .split(/\n\s*\n/)
        .find((text) => text.includes('EBADENGINE')) ?? '';
    const named = [...paragraph.matchAll(/`([\w@./-]+)`/g)]
      .map((match) => match[1] as string)
      .filter((name) => installed.has(name))
      .sort();
    expect(named).toEqual(refusing);
  });
});
