import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// What `npm install leaseq` gets must stand on its own: the links of its README and docs, the
// sources its source maps name, and its licence are in the package, not only in the repository.
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const packed = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
) as { files: { path: string }[] }[];
const files = new Set(packed[0]?.files.map((file) => file.path));

describe('the published package', () => {
  it('holds the licence its package.json names, and the built code', () => {
    expect(files.has('LICENSE')).toBe(true);
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    expect(files.has('dist/index.js')).toBe(true);
    expect(files.has('dist/cli/main.js')).toBe(true);
  });

  it('every relative link of its Markdown leads to a file of the package', () => {
    const broken: string[] = [];
    for (const path of [...files].filter((file) => file.endsWith('.md'))) {
      const text = readFileSync(join(root, path), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (target === undefined || /^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
        const file = normalize(join(dirname(path), decodeURI(target.split('#')[0] ?? '')));
        if (!files.has(file)) broken.push(`${path} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every source a source map names is in the package', () => {
    const maps = [...files].filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(100);
    const missing = new Set<string>();
    for (const path of maps) {
      const map = JSON.parse(readFileSync(join(root, path), 'utf8')) as {
        sources: string[];
        sourceRoot?: string;
      };
      for (const source of map.sources) {
        const file = normalize(join(dirname(path), map.sourceRoot ?? '', source));
        if (!files.has(file)) missing.add(`${path} → ${source}`);
      }
    }
    expect([...missing].slice(0, 10)).toEqual([]);
  });
});
