import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envName, flagName, SETTINGS } from '../../src/server/index.js';
import { startTestServer, type TestServer } from './helpers.js';

/**
 * The shell blocks of docs/http-api.md, in order: they must work as written, as one session. The
 * block right after one (```json or ```text) is what it prints.
 */
const DOC = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');
const EXAMPLES = [
  ...DOC.matchAll(/```sh\n([\s\S]*?)```(?:\s*```(json|text)\n([\s\S]*?)```)?/g),
].map((match) => ({
  block: match[1] as string,
  shown: match[2] === undefined ? undefined : { kind: match[2], text: match[3] as string },
}));
const BLOCKS = EXAMPLES.map(({ block }) => block);
const hasCurl = spawnSync('curl', ['--version']).status === 0;
const MARK = '@@block@@';
const ADMIN_KEY = 'docs-admin-key-0123456789';

let server: TestServer;
let keyed: TestServer;
let dir: string;

beforeAll(async () => {
  server = await startTestServer({ url: 'memory:' });
  keyed = await startTestServer({
    url: 'memory:',
    keys: [{ name: 'docs', key: ADMIN_KEY, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  dir = mkdtempSync(join(tmpdir(), 'leaseq-docs-'));
});

afterAll(async () => {
  await server?.close();
  await keyed?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What each block printed, the blocks run in order in one shell against `baseUrl`. */
async function runBlocks(baseUrl: string, env: Record<string, string> = {}): Promise<string[]> {
  const script = ['set -euo pipefail', ...BLOCKS.flatMap((block) => [`echo ${MARK}`, block])].join(
    '\n',
  );
  // Asynchronously: the server answering curl runs in this process.
  const { stdout: output } = await promisify(execFile)('bash', ['-c', script], {
    cwd: dir,
    env: { ...process.env, LEASEQ_API_KEY: '', ...env, LEASEQ: baseUrl },
    encoding: 'utf8',
    timeout: 30_000,
  });
  const outputs = output.split(`${MARK}\n`).slice(1);
  expect(outputs).toHaveLength(BLOCKS.length);
  return outputs;
}

/** The JSON values of `text`, one after the other (each pretty-printed or on one line). */
function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let index = 0;
  while (index < text.length) {
    if (/\s/.test(text[index] as string)) {
      index++;
      continue;
    }
    let end = index;
    if (text[index] === '{' || text[index] === '[') {
      let depth = 0;
      let inString = false;
      for (; end < text.length; end++) {
        const char = text[end];
        if (inString) {
          if (char === '\\') end++;
          else if (char === '"') inString = false;
        } else if (char === '"') inString = true;
        else if (char === '{' || char === '[') depth++;
        else if ((char === '}' || char === ']') && --depth === 0) break;
      }
      end++;
    } else {
      end = text.indexOf('\n', index);
      if (end === -1) end = text.length;
    }
    values.push(JSON.parse(text.slice(index, end)));
    index = end;
  }
  return values;
}

/** Receipts and session handles: opaque, different on every server. */
const OPAQUE = /^[A-Za-z0-9_-]{40,}$/;

/**
 * Where `printed` differs from `shown` in shape: the same fields (a shown `"…"` stands for any
 * others; `leaseAge` may come on any delivery), arrays of the same length, the same booleans,
 * nulls and strings (opaque ones aside); numbers (times, durations) only need to be numbers.
 */
function shapeDifference(shown: unknown, printed: unknown, path = '$'): string | undefined {
  if (Array.isArray(shown)) {
    if (!Array.isArray(printed) || printed.length !== shown.length) {
      return `${path}: shown ${shown.length} entries, printed ${JSON.stringify(printed)}`;
    }
    for (const [index, entry] of shown.entries()) {
      const difference = shapeDifference(entry, printed[index], `${path}[${index}]`);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  if (typeof shown === 'object' && shown !== null) {
    if (typeof printed !== 'object' || printed === null || Array.isArray(printed)) {
      return `${path}: shown an object, printed ${JSON.stringify(printed)}`;
    }
    const shownKeys = Object.keys(shown).filter((key) => key !== '…');
    const printedKeys = Object.keys(printed).filter((key) => key !== 'leaseAge');
    const missing = shownKeys.filter((key) => !printedKeys.includes(key));
    const extra = '…' in shown ? [] : printedKeys.filter((key) => !shownKeys.includes(key));
    if (missing.length > 0 || extra.length > 0) {
      return `${path}: fields shown but not printed [${missing}], printed but not shown [${extra}]`;
    }
    for (const key of shownKeys) {
      const difference = shapeDifference(
        (shown as Record<string, unknown>)[key],
        (printed as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  if (typeof shown === 'number') {
    return typeof printed === 'number' ? undefined : `${path}: printed ${printed}`;
  }
  if (typeof shown === 'string' && typeof printed === 'string' && OPAQUE.test(shown)) {
    return OPAQUE.test(printed) ? undefined : `${path}: printed ${printed}`;
  }
  return shown === printed ? undefined : `${path}: shown ${shown}, printed ${printed}`;
}

describe.skipIf(!hasCurl)('docs/http-api.md (needs curl)', () => {
  it('runs every example and prints what the page shows; only those marked "→ error" answer an error', async () => {
    expect(BLOCKS.length).toBeGreaterThan(25);
    const outputs = await runBlocks(server.baseUrl);
    BLOCKS.forEach((block, index) => {
      const printed = outputs[index] as string;
      if (block.includes('# → error')) expect(printed, block).toContain('"error"');
      else expect(printed, block).not.toContain('"error"');
    });
    // What an example prints is what the block after it shows: every answer, in order.
    const compared = EXAMPLES.filter(({ shown }, index) => {
      if (shown === undefined) return false;
      const printed = outputs[index] as string;
      if (shown.kind === 'text') {
        expect(printed.trim(), BLOCKS[index]).toBe(shown.text.trim());
        return true;
      }
      const want = jsonValues(shown.text);
      const got = jsonValues(printed);
      expect(got.length, `${BLOCKS[index]}\nprinted:\n${printed}`).toBe(want.length);
      want.forEach((value, at) => {
        expect(shapeDifference(value, got[at]), `${BLOCKS[index]}\nprinted:\n${printed}`).toBe(
          undefined,
        );
      });
      return true;
    });
    expect(compared.length).toBeGreaterThan(25);
    // Every route of the API has an example.
    for (const route of [
      '/jobs/batch',
      '/receive',
      '/operations',
      '/ack/batch',
      '/nack/batch',
      '/extend/batch',
      '/sessions/close',
      '/dead-letters/purge',
      '/schedules',
      '/inspect',
      '/stats',
      '/v1/stats',
      '/v1/me',
      '/v1/limits',
      '/deliveries',
      '/openapi.json',
    ]) {
      expect(DOC, route).toContain(`${route}`);
    }
  });
});

describe.skipIf(!hasCurl)('docs/http-api.md against a server with API keys (needs curl)', () => {
  it('runs every example as written once LEASEQ_API_KEY is exported', async () => {
    const outputs = await runBlocks(keyed.baseUrl, { LEASEQ_API_KEY: ADMIN_KEY });
    BLOCKS.forEach((block, index) => {
      const printed = outputs[index] as string;
      if (block.includes('# → error')) expect(printed, block).toContain('"error"');
      else expect(printed, block).not.toContain('"error"');
    });
    expect(outputs.join('')).toContain('"keysRequired":true');
  });
});

describe.skipIf(!hasCurl)('README.md quick start (needs curl)', () => {
  it('runs the curl blocks as written: the receipt is carried, the ack answers true', async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
      .map((match) => match[1] as string)
      .filter((block) => block.includes('curl'));
    expect(blocks.length).toBeGreaterThan(0);
    const { stdout } = await promisify(execFile)(
      'bash',
      ['-c', ['set -euo pipefail', ...blocks].join('\n')],
      {
        cwd: dir,
        env: { ...process.env, LEASEQ: server.baseUrl },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(stdout).not.toContain('"error"');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('{"acked":true}');
    // Run again on the same server: the flow does not depend on a fresh storage.
    const again = await promisify(execFile)('bash', ['-c', blocks.join('\n')], {
      cwd: dir,
      env: { ...process.env, LEASEQ: server.baseUrl },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(again.stdout.trimEnd().split('\n').at(-1)).toBe('{"acked":true}');
  });
});

describe('docs/operations.md', () => {
  it('names every setting as a file key, an environment variable and a flag', () => {
    const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    for (const { name } of SETTINGS) {
      const cells = [name, envName(name), `--${flagName(name)}`].map(
        (cell) => `\\s*\`${cell}\`\\s*`,
      );
      expect(operations).toMatch(new RegExp(`^\\|${cells.join('\\|')}\\|`, 'm'));
    }
  });
});
