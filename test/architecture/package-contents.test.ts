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

/** The relative links of the package's Markdown: where each is, what it says, the file it names. */
function relativeLinks(): { from: string; target: string; file: string }[] {
  const links: { from: string; target: string; file: string }[] = [];
  for (const from of [...files].filter((file) => file.endsWith('.md'))) {
    const text = readFileSync(join(root, from), 'utf8');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (target === undefined || /^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
      const file = normalize(join(dirname(from), decodeURI(target.split('#')[0] ?? '')));
      links.push({ from, target, file });
    }
  }
  return links;
}

describe('the published package', () => {
  it('holds the licence its package.json names, and the built code', () => {
    expect(files.has('LICENSE')).toBe(true);
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    expect(files.has('dist/index.js')).toBe(true);
    expect(files.has('dist/cli/main.js')).toBe(true);
  });

  it('every relative link of its Markdown leads to a file of the package', () => {
    const broken = relativeLinks()
      .filter((link) => !files.has(link.file))
      .map((link) => `${link.from} → ${link.target}`);
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

// It holds nothing that serves no purpose there. package.json's "files" takes src/ for the
// sources its source maps name, and bench/results for the reports the README and the docs link
// to; npm would also take bench/README.md with them, and all of src/ takes the dashboard's
// source, which its bundle in dist/ does not map back to.
describe('the published package leaves out what serves no purpose there', () => {
  it('holds the built dashboard and no source of it', () => {
    expect(files.has('dist/server/ui/public/app.js')).toBe(true);
    expect(files.has('dist/server/ui/public/index.html')).toBe(true);
    expect([...files].filter((file) => file.startsWith('src/server/ui/web/'))).toEqual([]);
    // The rest of src/ stays: the maps of dist/ name it.
    expect(files.has('src/server/ui/dashboard.ts')).toBe(true);
  });

  it('holds of bench/ only the reports its Markdown links to', () => {
    const linked = new Set(relativeLinks().map((link) => link.file));
    const bench = [...files].filter((file) => file.startsWith('bench/'));
    expect(bench).toContain('bench/results/latest.md');
    expect(bench).not.toContain('bench/README.md');
    expect(bench.filter((file) => !linked.has(file))).toEqual([]);
  });
});
