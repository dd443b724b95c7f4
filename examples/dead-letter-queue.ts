// Retries, a dead-letter queue, and the failed jobs moved back once the cause is fixed; the
// producer's own ids make its publishes idempotent. Runs to completion, then deletes its queues.
// Run: npx tsx examples/dead-letter-queue.ts [memory: | sqlite:… | postgres://… | http://…]
// (a server with API keys takes one from LEASEQ_API_KEY, with admin on invoices*: this example
// creates and deletes queues and moves jobs).
import { type Job, open, PermanentError, Worker } from 'leaseq';

interface Invoice {
  customer: string;
  cents?: number;
}

const url = process.argv[2] ?? 'sqlite:./data/dead-letter-queue.db';
const server = /^https?:\/\//i.test(url);
const broker = await open(url, server ? { apiKey: process.env.LEASEQ_API_KEY || undefined } : {});
// A fresh start: what a run stopped midway left goes (the run ends by deleting them too).
await broker.deleteQueue('invoices');
await broker.deleteQueue('invoices-dlq');
// The dead-letter queue first: the jobs that die in `invoices` move there, with their history.
const failed = await broker.queue('invoices-dlq');
const invoices = await broker.queue('invoices', {
  visibility: 30_000,
  maxDeliveries: 3,
  deadLetterQueue: 'invoices-dlq',
});

// The producer names each job: published again (a retry after a timeout), a job still in the
// queue is not stored twice, the answer says `duplicate: true`.
const batch = [
  { id: 'invoice-1', payload: { customer: 'ada', cents: 1250 } },
  { id: 'invoice-2', payload: { customer: 'acme', cents: 9900 } },
  { id: 'invoice-3', payload: { customer: 'bob' } }, // no amount: can never succeed
];
console.log('published:', await invoices.publishBatch(batch));
console.log('published again:', await invoices.publishBatch(batch));

let billingDownFor = 'acme'; // the billing API fails for this customer until it is fixed
async function bill(job: Job<Invoice>): Promise<void> {
  const { customer, cents } = job.payload;
  if (cents === undefined) throw new PermanentError('no amount', { reason: 'invalid-payload' });
  // Anything else thrown is retried with backoff up to the queue's maxDeliveries, then dies.
  if (customer === billingDownFor) throw new Error('billing API answered 503');
  console.log(`billed ${customer} ${cents} cents (${job.id}, delivery ${job.deliveryCount})`);
}

/** Runs a worker on `invoices` until `count` jobs were acked or died, then closes it. */
async function drain(count: number): Promise<void> {
  // Short delays for the example; a service retries over seconds to minutes.
  const worker = new Worker(invoices, bill, {
    concurrency: 4,
    backoff: { baseDelay: 100, maxDelay: 1000 },
  });
  let settled = 0;
  const finished = new Promise<void>((resolve) => {
    worker.on('outcome', ({ outcome }) => {
      if (outcome === 'acked' || outcome === 'dead') settled += 1;
      if (settled === count) resolve();
    });
  });
  await worker.start();
  await finished;
  await worker.close();
}

await drain(3);
for (const id of ['invoice-2', 'invoice-3']) {
  const job = await failed.job(id);
  const attempts = job?.history ?? [];
  console.log(
    `${id} in invoices-dlq: died of ${job?.origin?.reason} after ${attempts.length} ` +
      `${attempts.length === 1 ? 'attempt' : 'attempts'}, the last: ${attempts.at(-1)?.error}`,
  );
}

// Once the cause is fixed, the jobs it killed go back to the queue they died in (ids kept,
// deliveries counted from 0); the one with bad data stays for a person to look at.
billingDownFor = '';
console.log('moved back:', await failed.moveJobs({ ids: ['invoice-2'] }));
await drain(1);
const { ready } = await failed.stats();
console.log(`invoices-dlq: ${ready} job left`);

await broker.deleteQueue('invoices');
await broker.deleteQueue('invoices-dlq');
await broker.close();
