// A consumer process for the kill tests: holds deliveries over the stream and says so on
// stdout, until it is killed. Loads the built package, as users run it.
// argv: serverUrl queueName concurrency
import { openRemote, silentLogger, work } from '../../dist/index.js';

const [url, name, concurrency] = process.argv.slice(2);
const client = await openRemote(url);
const queue = client.handle(name);
// Two deliveries in a session this connection opened: released at once when it dies (R12).
const session = await queue.openSession();
const inSession = await queue.receive({ max: 2, session });
let held = 0;
await work(
  queue,
  async () => {
    held += 1;
    if (held === Number(concurrency)) {
      process.stdout.write(`${JSON.stringify({ held, session: inSession.length })}\n`);
    }
    // Never finishes: the jobs are in hand when the process is killed.
    await new Promise(() => {});
  },
  { concurrency: Number(concurrency), logger: silentLogger },
);
