/**
 * Where a V8 CPU profile spends its time: self time by area (leaseq's folders, packages, Node's
 * internals, GC, idle) and by function. For the profiles `npm run bench -- --profile` writes.
 *
 *   node --import tsx profile.ts results/profiles/leaseq-http-run1.cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { benchArgs, wholeNumber } from './lib/args.js';
import { markdownTable } from './table.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const USAGE = `
usage: node --import tsx profile.ts PROFILE.cpuprofile... [--top N]

Where each V8 CPU profile spends its time: self time by area and by function (the top N,
default 25).
`;
const { values, positionals } = benchArgs(USAGE, {
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
const top = wholeNumber('top', values.top, 1);

/** leaseq's folder under dist/ or src/, a package's name, or Node's own code. */
export function area(url: string, functionName: string): string {
  if (url === '') return functionName === '' ? '(anonymous native)' : functionName;
  if (url.startsWith('node:'))
    return `node:${url.slice(5).split('/')[0] === 'internal' ? 'internal' : url.slice(5)}`;
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch?.[1] !== undefined) return packageMatch[1];
  const own = /\/(?:dist|src)\/([^/]+)\//.exec(url);
  if (own?.[1] !== undefined) return `leaseq ${own[1]}/`;
  return basename(url);
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfByFunction = new Map<string, number>();
  const selfByArea = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    const node = byId.get(id);
    if (node === undefined) return;
    const { functionName, url, lineNumber } = node.callFrame;
    const where =
      url === ''
        ? ''
        : ` ${url.replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    const key = `${functionName || '(anonymous)'}${where}`;
    selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + delta);
    const group = area(url, functionName);
    selfByArea.set(group, (selfByArea.get(group) ?? 0) + delta);
    total += delta;
  });
  const rows = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, micros]) => [
        name,
        (micros / 1000).toFixed(0),
        `${((micros / total) * 100).toFixed(1)}%`,
      ]);
  console.log(`## ${basename(file)}: ${(total / 1e6).toFixed(1)} s sampled\n`);
  console.log(markdownTable(['area', 'self ms', 'share'], rows(selfByArea)));
  console.log('');
  console.log(markdownTable(['function', 'self ms', 'share'], rows(selfByFunction)));
  console.log('');
}
