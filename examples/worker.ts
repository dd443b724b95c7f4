// A production consumer: 8 jobs at a time, leases renewed, retries with backoff, poison jobs
// dead-lettered, graceful shutdown on SIGTERM/SIGINT. Run: npx tsx examples/worker.ts [url]
// (DEMO=1 publishes three jobs first; MAIL_API_URL sends for real, else the mail is printed;
// a leaseq server's URL, http://…, takes its API key from LEASEQ_API_KEY, as the CLI does.)
import { closeOnSignals, open, PermanentError, work } from 'leaseq';

interface Email {
  to: string;
  subject: string;
}

const url = process.argv[2] ?? 'sqlite:./data/leaseq.db';
const server = /^https?:\/\//i.test(url);
const broker = await open(url, server ? { apiKey: process.env.LEASEQ_API_KEY || undefined } : {});
const emails = await broker.queue('emails', { visibility: 30_000, maxDeliveries: 5 });
if (process.env.DEMO) {
  await emails.publishBatch(
    [1, 2, 3].map((n) => ({ payload: { to: `u${n}@example.com`, subject: 'Welcome' } })),
  );
}

const worker = await work<Email>(
  emails,
  async (job, ctx) => {
    if (!job.payload?.to) throw new PermanentError('no recipient', { reason: 'invalid-payload' });
    const url = process.env.MAIL_API_URL;
    if (url === undefined) return console.log(`mail to ${job.payload.to} (job ${job.id})`);
    // The job id is the idempotency key: a redelivered job cannot send the mail twice.
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': job.id },
      body: JSON.stringify(job.payload),
      signal: ctx.signal, // fires when the lease is lost or shutdown gives up on the job
    });
    if (response.status === 422) throw new PermanentError(`mail API refused job ${job.id}`);
    if (!response.ok) throw new Error(`mail API answered ${response.status}`); // retried later
  },
  { concurrency: 8, backoff: { baseDelay: 2000, maxDelay: 300_000 } },
);

closeOnSignals(worker, { timeout: 25_000, onClosed: () => void broker.close() });
