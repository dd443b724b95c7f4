/**
 * npm run faults [-- --only a,b] [--load-ms N] [--seed N] [--transport http|stream]: every fault scenario over real
 * `leaseq serve` processes, the checkers over each history, the table printed and written into
 * docs/reliability.md (only when every scenario ran). Exits 1 on any violation.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { postgresSkipReason } from '../test/crash/postgres.js';
import { PrivatePostgres } from '../test/faults/private-postgres.js';
import { generatedSection, replaceSection, resultsTable } from '../test/faults/report.js';
import { runScenario, type ScenarioResult } from '../test/faults/scenario-runner.js';
import { SCENARIOS } from '../test/faults/scenarios.js';
import { killRunningServers } from '../test/faults/server-process.js';

const DOC = new URL('../docs/reliability.md', import.meta.url);
/** The whole run is cut off after this long, whatever hangs. */
const RUN_LIMIT_MS = 10 * 60_000;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      'load-ms': { type: 'string', default: '8000' },
      seed: { type: 'string' },
      transport: { type: 'string', default: 'http' },
    },
  });
  const transport = values.transport;
  if (transport !== 'http' && transport !== 'stream') {
    console.error(`--transport must be http or stream, got ${transport}`);
    return 2;
  }
  const only = values.only?.split(',');
  const unknown = only?.filter((name) => !SCENARIOS.some((scenario) => scenario.name === name));
  if (unknown !== undefined && unknown.length > 0) {
    console.error(
      `unknown scenarios: ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`,
    );
    return 2;
  }
  const loadMs = Number(values['load-ms']);
  const seed =
    values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
  const scenarios = SCENARIOS.filter(
    (scenario) => only === undefined || only.includes(scenario.name),
  );
  const started = Date.now();
  const results: ScenarioResult[] = [];
  const pgSkip = await postgresSkipReason();
  for (const scenario of scenarios) {
    const skipped = skipReason(scenario.storage, pgSkip);
    if (skipped !== undefined) {
      results.push({
        scenario: scenario.name,
        seed,
        durationMs: 0,
        counts: {},
        checks: [],
        staleAcks: 0,
        redeliveries: 0,
        notes: [],
        problems: [],
        skipped,
      });
      console.info(`${scenario.name}: skipped (${skipped})`);
      continue;
    }
    const result = await runScenario(scenario, { loadMs, seed, transport });
    results.push(result);
    const failed = result.checks.flatMap((check) =>
      check.violations.map((v) => `${check.checker}: ${v}`),
    );
    console.info(
      `${scenario.name}: ${failed.length + result.problems.length === 0 ? 'ok' : 'FAILED'} in ${result.durationMs} ms; ${result.notes.join('; ')}`,
    );
    for (const text of [...failed.slice(0, 10), ...result.problems]) console.info(`  - ${text}`);
  }
  console.info(`\n${resultsTable(results)}\n`);
  if (only === undefined && transport === 'http') {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
    const date = new Date().toISOString().slice(0, 10);
    const section = generatedSection(SCENARIOS, results, {
      commit,
      date,
      seed,
      loadMs,
      totalMs: Date.now() - started,
    });
    writeFileSync(DOC, replaceSection(readFileSync(DOC, 'utf8'), section));
    // Tables padded as the linter wants, so that npm test passes with the new page.
    execFileSync('npx', ['biome', 'format', '--write', fileURLToPath(DOC)], { stdio: 'ignore' });
    console.info('docs/reliability.md updated');
  }
  const bad = results.some(
    (r) => r.problems.length > 0 || r.checks.some((c) => c.violations.length > 0),
  );
  console.info(
    `seed ${seed}; ${bad ? 'FAILED' : 'all passed'} in ${((Date.now() - started) / 1000).toFixed(0)} s (repeat: npm run faults -- --seed ${seed})`,
  );
  return bad ? 1 : 0;
}

/** Why a scenario cannot run here; under CI=true a missing PostgreSQL fails instead. */
function skipReason(storage: string, pgSkip: string | undefined): string | undefined {
  if (storage === 'postgres') return pgSkip;
  if (storage !== 'private-postgres') return undefined;
  const reason = PrivatePostgres.unavailable();
  if (reason !== undefined && process.env.CI === 'true') throw new Error(`CI=true: ${reason}`);
  return reason;
}

const limit = setTimeout(async () => {
  console.error(`npm run faults: still running after ${RUN_LIMIT_MS / 60_000} min: stopping`);
  await killRunningServers();
  process.exit(1);
}, RUN_LIMIT_MS);
limit.unref();

main()
  .then(async (code) => {
    await killRunningServers();
    process.exit(code);
  })
  .catch(async (error) => {
    console.error(error);
    await killRunningServers();
    process.exit(1);
  });
