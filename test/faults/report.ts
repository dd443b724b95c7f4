import { CHECKER_MEANINGS, CHECKERS } from '../history/checkers.js';
import type { Scenario, ScenarioResult } from './scenario-runner.js';

const BEGIN = '<!-- faults:begin (written by npm run faults) -->';
const END = '<!-- faults:end -->';

function operations(result: ScenarioResult): string {
  const { counts } = result;
  const cell = (f: string) => {
    const c = counts[f];
    return c === undefined ? '0' : `${c.ok}${c.unknown > 0 ? ` +${c.unknown}?` : ''}`;
  };
  const others = ['nack', 'reject', 'extend']
    .map((f) => counts[f]?.ok ?? 0)
    .reduce((sum, n) => sum + n, 0);
  return `publish ${cell('publish')}, receive ${cell('receive')}, ack ${cell('ack')} (false ${result.staleAcks}), nack/reject/extend ${others}, redeliveries ${result.redeliveries}`;
}

function checkerCell(result: ScenarioResult, name: (typeof CHECKERS)[number]): string {
  const check = result.checks.find((each) => each.checker === name);
  if (check === undefined) return '–';
  return check.violations.length === 0
    ? `✓ ${check.examined}`
    : `✗ ${check.violations.length} of ${check.examined}`;
}

/** The faults × checkers table, with what each fault did. */
export function resultsTable(results: readonly ScenarioResult[]): string {
  const header = ['fault', 'operations (answered +unknown?)', ...CHECKERS, 'fault expectations'];
  const rows = results.map((result) => {
    if (result.skipped !== undefined) {
      return [result.scenario, `skipped: ${result.skipped}`, ...CHECKERS.map(() => '–'), '–'];
    }
    const expectations = result.problems.length === 0 ? '✓' : `✗ ${result.problems.length}`;
    return [
      `\`${result.scenario}\``,
      operations(result),
      ...CHECKERS.map((name) => checkerCell(result, name)),
      expectations,
    ];
  });
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The generated part of docs/reliability.md: checkers, faults, the table, what happened. */
export function generatedSection(
  scenarios: readonly Scenario[],
  results: readonly ScenarioResult[],
  run: { commit: string; date: string; seed: number; loadMs: number; totalMs: number },
): string {
  const notes = results.map((result) => {
    const problems = result.problems.map((problem) => `PROBLEM: ${problem.split('\n')[0]}`);
    const text = [...result.notes, ...problems].join('; ') || 'no notes';
    return `- \`${result.scenario}\` (${(result.durationMs / 1000).toFixed(1)} s): ${text}`;
  });
  return [
    BEGIN,
    '',
    '### The checkers',
    '',
    'One module, `test/history/checkers.ts`, used by the fault suite and by the simulation alike.',
    '',
    checkerTable(),
    '',
    '### The faults',
    '',
    '| fault | what it does | storage |',
    '| --- | --- | --- |',
    ...scenarios.map(
      (s) =>
        `| \`${s.name}\` | ${s.description} | ${s.storage}${s.servers ? ` × ${s.servers} servers` : ''} |`,
    ),
    '',
    '### Results',
    '',
    `Run of ${run.date} on commit \`${run.commit}\`, seed ${run.seed}, ${run.loadMs / 1000} s of load per fault, ${(run.totalMs / 1000).toFixed(0)} s in all. The machine has 2 cores shared with other work, so the operation counts are small and vary from run to run.`,
    'A checker cell is `✓ n` (n examined, no violation) or `✗ k of n`; "fault expectations" are the fault\'s own checks (a damaged file refused, the server alive after PostgreSQL restarted, disk full answered 503, the drain finished).',
    '',
    resultsTable(results),
    '',
    'What each fault did in this run:',
    '',
    ...notes,
    '',
    END,
  ].join('\n');
}

/** Replaces the generated section of `doc` (or appends it when missing). */
export function replaceSection(doc: string, section: string): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < 0) return `${doc.trimEnd()}\n\n${section}\n`;
  return `${doc.slice(0, start)}${section}${doc.slice(end + END.length)}`;
}

/** The checkers' meanings, as a table (docs). */
export function checkerTable(): string {
  return [
    '| checker | examines | fails when |',
    '| --- | --- | --- |',
    ...CHECKERS.map(
      (name) =>
        `| \`${name}\` | ${CHECKER_MEANINGS[name].examines} | ${CHECKER_MEANINGS[name].fails} |`,
    ),
  ].join('\n');
}
