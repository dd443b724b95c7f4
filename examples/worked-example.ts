// The acceptance case of docs/spec.md, step by step, on the pure core.
import { ClockError, LeaseQueue } from 'leaseq';

const queue = new LeaseQueue({ visibility: 5 });
const step = (what: string, result: unknown) =>
  console.log(`${what.padEnd(38)} → ${JSON.stringify(result)}`);

step("publish(0, { id: 'a' })", queue.publish(0, { id: 'a' }));
step('reserve(0)', queue.reserve(0));
// stats is an operation: it lets time pass to 4 (inspect takes no time, it reads).
step('stats(4).queueTime', queue.stats(4).queueTime);
step('inspect().active at 4: token 1 is live', queue.inspect().active);
step('ack(5, 1): deadline 5 ≤ 5, reclaimed', queue.ack(5, 1));
step('inspect().ready', queue.inspect().ready);
step('reserve(5)', queue.reserve(5));
step('ack(5, 1) again: stale', queue.ack(5, 1));
step('inspect().active: token 2 is live', queue.inspect().active);
step('ack(6, 2)', queue.ack(6, 2));
step('inspect(): empty', queue.inspect());
try {
  queue.ack(4, 2);
} catch (error) {
  if (!(error instanceof ClockError)) throw error;
  step('ack(4, 2)', `${error.code}: ${error.message}`);
}
step('queueTime', queue.queueTime);
