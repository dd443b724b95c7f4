#!/usr/bin/env node
import { runCli } from './run.js';

/** The only place that reads argv, listens for signals or sets the exit code. */
const stop = new AbortController();
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => stop.abort());
}

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  stop: stop.signal,
});
process.exitCode = code;
// Nothing else should keep the process: a second signal is not needed to leave.
process.removeAllListeners('SIGTERM');
process.removeAllListeners('SIGINT');
