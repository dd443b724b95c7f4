import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * What a project that installs the package relies on, read from package.json: the Node versions
 * it admits load it, the driver versions it admits work, every entry point resolves for the
 * TypeScript settings projects use and is shown in the docs.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  exports: Record<string, string | { types?: string }>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

type Version = [number, number, number];

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** The alternatives of a range written as `^X.Y.Z` or `>=X.Y.Z`, joined by `||`. */
function alternatives(range: string): { op: '^' | '>='; from: Version }[] {
  return range.split('||').map((part) => {
    const match = /^(\^|>=)(\d+)\.(\d+)\.(\d+)$/.exec(part.trim());
    if (match === null) throw new Error(`a range this test does not read: ${part.trim()}`);
    const [, op, major, minor, patch] = match;
    return { op: op as '^' | '>=', from: [Number(major), Number(minor), Number(patch)] };
  });
}

/** The lowest version of each major the range admits, up to `lastMajor`. */
function lowestByMajor(range: string, lastMajor: number): Version[] {
  return alternatives(range).flatMap(({ op, from }) => {
    if (op === '^') return [from];
    const lowest: Version[] = [from];
    for (let major = from[0] + 1; major <= lastMajor; major++) lowest.push([major, 0, 0]);
    return lowest;
  });
}

/**
 * The first release of a Node major that loads an ES module by `require()` without a flag
 * (20.19, 22.12, every release from 23); none for the majors that never did.
 */
function requireOfModulesSince(major: number): Version | undefined {
  if (major === 20) return [20, 19, 0];
  if (major === 22) return [22, 12, 0];
  return major >= 23 ? [major, 0, 0] : undefined;
}

/** The entry points of package.json's exports with types: `leaseq`, `leaseq/testing` … */
function entryPoints(): { specifier: string; types: string }[] {
  return Object.entries(pkg.exports).flatMap(([subpath, target]) => {
    const types = typeof target === 'string' ? undefined : target.types;
    return types === undefined
      ? []
      : [{ specifier: `leaseq${subpath.slice(1)}`, types: resolve(ROOT, types) }];
  });
}

beforeAll(() => {
  if (!existsSync(resolve(ROOT, 'dist/index.d.ts'))) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
});

describe('a project that installs the package', () => {
  it('runs it on every Node version engines admits, by import or require', () => {
    const refused = lowestByMajor(pkg.engines.node, 30).filter((version) => {
      const since = requireOfModulesSince(version[0]);
      return since === undefined || compare(version, since) < 0;
    });
    expect(refused.map((version) => version.join('.'))).toEqual([]);
  });

  it('the README states the Node versions engines admits', () => {
    const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
    const stated = /`engines`: `([^`]+)`/.exec(readme)?.[1];
    expect(stated).toBe(pkg.engines.node);
  });

  it('gets no pg the PostgreSQL engine cannot use (8.13.1 and later honour its type parsers)', () => {
    // Before 8.13.1 a client ignores the `types` it is given: bigint columns arrive as strings,
    // counts are strings and acks of such tokens answer false.
    const lowest = lowestByMajor(pkg.peerDependencies.pg ?? '', 8);
    expect(lowest.filter((version) => compare(version, [8, 13, 1]) < 0)).toEqual([]);
    const tested = (pkg.devDependencies.pg ?? '').split('.').map(Number) as Version;
    expect(
      lowest.some((version) => version[0] === tested[0] && compare(tested, version) >= 0),
    ).toBe(true);
  });

  it('resolves the types of every entry point with the module resolutions of TypeScript projects', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaseq-consumer-'));
    try {
      mkdirSync(join(dir, 'node_modules'));
      symlinkSync(ROOT, join(dir, 'node_modules', 'leaseq'), 'dir');
      const importer = join(dir, 'index.ts');
      const settings: Record<string, ts.CompilerOptions> = {
        nodenext: {
          module: ts.ModuleKind.NodeNext,
          moduleResolution: ts.ModuleResolutionKind.NodeNext,
        },
        bundler: {
          module: ts.ModuleKind.ESNext,
          moduleResolution: ts.ModuleResolutionKind.Bundler,
        },
        // `"module": "commonjs"` resolves this way unless told otherwise.
        node10: {
          module: ts.ModuleKind.CommonJS,
          moduleResolution: ts.ModuleResolutionKind.Node10,
        },
      };
      const entries = entryPoints();
      expect(entries.map((entry) => entry.specifier)).toEqual(
        expect.arrayContaining(['leaseq', 'leaseq/testing', 'leaseq/server']),
      );
      const resolved: string[] = [];
      const expected: string[] = [];
      for (const [name, options] of Object.entries(settings)) {
        for (const { specifier, types } of entries) {
          const found = ts.resolveModuleName(specifier, importer, options, ts.sys);
          resolved.push(`${name} ${specifier} → ${found.resolvedModule?.resolvedFileName}`);
          expected.push(`${name} ${specifier} → ${types}`);
        }
      }
      expect(resolved).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds every entry point imported in a code example of the README or the docs', () => {
    const pages = [
      'README.md',
      ...readdirSync(resolve(ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ];
    const imported = new Set(
      pages.flatMap((page) =>
        [...readFileSync(resolve(ROOT, page), 'utf8').matchAll(/from '(leaseq[\w/-]*)'/g)].map(
          (match) => match[1],
        ),
      ),
    );
    expect(entryPoints().filter(({ specifier }) => !imported.has(specifier))).toEqual([]);
  });
});
