import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layers of ARCHITECTURE.md are lint rules (biome.json, noRestrictedImports per folder):
 * a wrong import fails `npm test`. Each case lints a probe file as if it stood
 * at that path in a scratch copy of the project's lint configuration, so nothing is written
 * into the tree.
 */
function lint(path: string, source: string): { ok: boolean; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'leaseq-boundaries-'));
  try {
    const config = JSON.parse(readFileSync('biome.json', 'utf8'));
    config.vcs = { enabled: false };
    config.files = { includes: ['**'] };
    writeFileSync(join(dir, 'biome.json'), JSON.stringify(config));
    mkdirSync(join(dir, dirname(path)), { recursive: true });
    writeFileSync(join(dir, path), source);
    const result = spawnSync(process.execPath, [BIOME, 'lint', path], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 20_000,
    });
    return { ok: result.status === 0, output: `${result.stdout}${result.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const BIOME = resolve('node_modules/@biomejs/biome/bin/biome');

const REFUSED: [string, string, string][] = [
  ['src/core/probe.ts', "import * as probe from '../server/index.js';", 'core/'],
  ['src/core/probe.ts', "import * as probe from 'node:fs';", 'no I/O'],
  ['src/wire/probe.ts', "import * as probe from '../engine/index.js';", 'wire/'],
  ['src/engine/sql/probe.ts', "import * as probe from '../../broker/index.js';", 'engine/'],
  ['src/broker/probe.ts', "import * as probe from '../client/index.js';", 'broker/'],
  ['src/worker/probe.ts', "import * as probe from '../engine/index.js';", 'worker/'],
  ['src/client/probe.ts', "import * as probe from '../server/receipts.js';", 'client/'],
  ['src/server/probe.ts', "import * as probe from '../worker/index.js';", 'server/'],
  ['src/testing/probe.ts', "import * as probe from '../server/index.js';", 'testing/'],
];

const ALLOWED: [string, string][] = [
  ['src/wire/probe.ts', "import * as probe from '../core/index.js';"],
  ['src/engine/sql/probe.ts', "import * as probe from '../../core/index.js';"],
  ['src/client/probe.ts', "import * as probe from '../wire/index.js';"],
  ['src/server/probe.ts', "import * as probe from '../wire/index.js';"],
];

describe('import boundaries (ARCHITECTURE.md)', () => {
  it.each(REFUSED)('refuses %s importing: %s', (path, line, message) => {
    const { ok, output } = lint(path, `${line}\nexport { probe };\n`);
    expect(ok, output).toBe(false);
    expect(output).toContain('noRestrictedImports');
    expect(output).toContain(message);
  });

  it.each(ALLOWED)('allows %s importing: %s', (path, line) => {
    const { ok, output } = lint(path, `${line}\nexport { probe };\n`);
    expect(output).not.toContain('noRestrictedImports');
    expect(ok, output).toBe(true);
  });
});
