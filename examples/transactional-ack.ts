// The transactional ack: the debit and the ack commit together, or neither does.
// Run: npx tsx examples/transactional-ack.ts [sqlite:./data/transactional-ack.db | postgres://…]
import { open } from 'leaseq';

const broker = await open(process.argv[2] ?? 'sqlite:./data/transactional-ack.db');
const payments = await broker.queue('payments', { visibility: 30_000 });
await broker.transaction((tx) =>
  tx.run(
    'CREATE TABLE IF NOT EXISTS ledger (job_id TEXT PRIMARY KEY, account TEXT, cents INTEGER)',
  ),
);

await payments.publish({ id: 'debit-42', payload: { account: 'acct-7', cents: 1250 } });
const [job] = await payments.receive({ wait: 1000 });
if (job !== undefined) {
  const { account, cents } = job.payload as { account: string; cents: number };
  const debited = await broker.transaction(async (tx) => {
    // The job id keys the debit: a job debited before (a redelivery, or this example run again
    // on the same file) is acked without a second debit.
    const inserted = await tx.run(
      'INSERT INTO ledger (job_id, account, cents) VALUES (?, ?, ?) ON CONFLICT (job_id) DO NOTHING',
      [job.id, account, -cents],
    );
    // Same transaction: if the ack is refused (lease lost) we throw, and the debit rolls back.
    if (!(await tx.ack('payments', job.token)))
      throw new Error(`lease of ${job.id} lost; not debited`);
    return inserted === 1;
  });
  console.log(
    debited
      ? `debited ${account} ${cents} cents for ${job.id}, acked`
      : `${job.id} was debited before: acked, not debited again`,
  );
}
const rows = await broker.transaction((tx) =>
  tx.query('SELECT job_id, account, cents FROM ledger'),
);
console.log('ledger:', rows);
await broker.close();
