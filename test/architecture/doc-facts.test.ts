import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** Facts the docs state about the code and each other, read from where they are defined. */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
/** The pages that name the whole contract by its range of rules (others cite a part of it). */
const WHOLE_CONTRACT = ['README.md', 'docs/concepts.md', 'docs/http-api.md', 'docs/stream.md'];

describe('the docs agree with the code', () => {
  it('every range of rules (R1…Rn) ends at the last rule of docs/spec.md', () => {
    const numbers = [...read('docs/spec.md').matchAll(/^- R(\d+)\./gm)].map((m) => Number(m[1]));
    const last = Math.max(...numbers);
    const ranges = WHOLE_CONTRACT.flatMap((path) =>
      [...read(path).matchAll(/\bR1\s?[…–-]\s?R(\d+)/g)].map((m) => `${path}: R${m[1]}`),
    );
    expect(ranges.length).toBeGreaterThan(0);
    expect(ranges.filter((range) => !range.endsWith(`: R${last}`))).toEqual([]);
  });

  it('the worked example is run by the script concepts.md names', () => {
    const scripts: Record<string, string> = JSON.parse(read('package.json')).scripts;
    const runner = Object.entries(scripts).find(([, command]) =>
      command.includes('worked-example'),
    )?.[0];
    const named = /`npm (start|run [\w:-]+)` runs exactly this/.exec(read('docs/concepts.md'))?.[1];
    expect(named?.replace(/^run /, '')).toBe(runner);
  });

  it('worker.md lists every reason a lease is lost for (all but auto-ack, never an outcome)', () => {
    const union = /export type LeaseLossReason =([\s\S]*?);/.exec(
      read('src/worker/errors.ts'),
    )?.[1];
    const names = (union ?? '').replace(/\/\*[\s\S]*?\*\//g, '');
    const reasons = [...names.matchAll(/'([\w-]+)'/g)].map((m) => m[1] as string);
    const rows = read('docs/worker.md')
      .split('\n')
      .filter((line) => line.includes('| `lease-lost` |'))
      .join('\n');
    const listed = [...rows.matchAll(/`([\w-]+)`/g)].map((m) => m[1]);
    expect(reasons.filter((reason) => reason !== 'auto-ack' && !listed.includes(reason))).toEqual(
      [],
    );
  });

  it('a faults run reliability.md calls a longer load is longer than the default', () => {
    const fallback = /'load-ms': \{[^}]*default: '(\d+)'/.exec(read('scripts/faults.ts'))?.[1];
    const longer = [...read('docs/reliability.md').matchAll(/--load-ms (\d+)\s+#[^\n]*longer/g)];
    expect(longer.length).toBeGreaterThan(0);
    for (const match of longer) expect(Number(match[1])).toBeGreaterThan(Number(fallback));
  });
});
