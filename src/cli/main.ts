#!/usr/bin/env node
import { EXIT } from './command.js';
import { ParentWatch, startedByNpm } from './parent-watch.js';
import { hearsStop, runCli } from './run.js';

/** The only place that reads argv, listens for signals or sets the exit code. */
const argv = process.argv.slice(2);
const stop = new AbortController();
// The first signal stops a command that hears it as it says (publish: the batch in hand is
// sent); a second one ends the process at once, as the default action would: whatever the
// first is waiting for (a read of a quiet FIFO, a storage lock), the user can always get out.
// Any other command (queue stats, ack) has nothing to finish: the first ends it at once.
const hearing = hearsStop(argv);
// `serve` hears it only once it listens (context.started): a start waiting on the storage ends.
let hears = hearing === true;
let signalled = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (hears && !signalled) {
      signalled = true;
      stop.abort();
      return;
    }
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
}
// A reader that went away (`leaseq dead list q | head -1`) ends the command as SIGPIPE ends
// other programs: quietly, with the shell's code for it (128 + 13), so pipefail still sees it.
// Standard error too (`leaseq publish q --file f 2>&1 | head -1`): not an uncaught EPIPE.
// A command that handles standard output's failures itself (receive --auto-ack gives back the
// jobs it did not write, then says so) hears them through its writes' callbacks meanwhile.
let outputErrorsHandled = 0;
let outputErrorsSaid = false;
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (stream === process.stdout && outputErrorsHandled > 0) return;
    if (error.code === 'EPIPE') process.exit(EXIT.readerGone);
    // Any other failure (a full disk, `> /dev/full`): one line, not a stack trace, and exit 1;
    // none when a command that handled output failures has said so already.
    if (stream === process.stdout && !outputErrorsSaid) {
      process.stderr.write(`leaseq: cannot write standard output: ${error.message}\n`);
    }
    process.exit(1);
  });
}
function handleOutputErrors(): (said?: boolean) => void {
  outputErrorsHandled += 1;
  let ended = false;
  return (said = false) => {
    if (!ended) outputErrorsHandled -= 1;
    ended = true;
    if (said) outputErrorsSaid = true;
  };
}

// Under npm or npx the signal may stop at the wrapper's shell: stop when the parent goes.
const parentWatch = startedByNpm(process.env)
  ? new ParentWatch(() => (hears ? stop.abort() : process.kill(process.pid, 'SIGTERM'))).start()
  : undefined;

const code = await runCli(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  stop: stop.signal,
  handleOutputErrors,
  started: () => {
    hears = hearing !== undefined;
  },
});
process.exitCode = code;
parentWatch?.stop();
// Nothing else should keep the process: a second signal is not needed to leave.
process.removeAllListeners('SIGTERM');
process.removeAllListeners('SIGINT');
