import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// What `npm install leaseq` gets holds nothing that serves no purpose there. package.json's
// "files" takes src/ for the sources its source maps name, and bench/results for the reports
// the README and the docs link to; npm would also take bench/README.md with them, and all of
// src/ takes the dashboard's source, which its bundle in dist/ does not map back to.
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const packed = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
) as { files: { path: string }[] }[];
const files = new Set(packed[0]?.files.map((file) => file.path));

describe('the published package leaves out what serves no purpose there', () => {
  it('holds the built dashboard and no source of it', () => {
    expect(files.has('dist/server/ui/public/app.js')).toBe(true);
    expect(files.has('dist/server/ui/public/index.html')).toBe(true);
    expect([...files].filter((file) => file.startsWith('src/server/ui/web/'))).toEqual([]);
    // The rest of src/ stays: the maps of dist/ name it.
    expect(files.has('src/server/ui/dashboard.ts')).toBe(true);
  });

  it('holds of bench/ only the reports its Markdown links to', () => {
    const linked = new Set<string>();
    for (const path of [...files].filter((file) => file.endsWith('.md'))) {
      const text = readFileSync(join(root, path), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (target === undefined || /^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
        linked.add(normalize(join(dirname(path), decodeURI(target.split('#')[0] ?? ''))));
      }
    }
    const bench = [...files].filter((file) => file.startsWith('bench/'));
    expect(bench).toContain('bench/results/latest.md');
    expect(bench).not.toContain('bench/README.md');
    expect(bench.filter((file) => !linked.has(file))).toEqual([]);
  });
});
