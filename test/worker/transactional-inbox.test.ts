import { expect, it } from 'vitest';
import { UnsupportedError } from '../../src/core/index.js';
import { inboxHandler, TransactionalInbox } from '../../src/worker/index.js';
import { describeEngines, workerEngines } from './engines.js';

const engines = await workerEngines();
// Transactions need the SQL engine in-process: the memory engine and the HTTP client have none.
const memory = engines.filter((engine) => engine.name !== 'sqlite');
const sql = engines.filter((engine) => engine.name === 'sqlite');

describeEngines(sql, 'the transactional inbox', (open) => {
  it('ack lost after the debit committed: the redelivery is absorbed in the same database', async () => {
    const h = await open();
    await h.broker.transaction((tx) =>
      tx.run('CREATE TABLE ledger (job_id TEXT PRIMARY KEY, cents INTEGER NOT NULL)'),
    );
    const inbox = new TransactionalInbox(h.broker);
    const consumer = h.process<{ cents: number }>(
      inboxHandler(inbox, 'ledger', async (tx, ctx) => {
        await tx.run('INSERT INTO ledger (job_id, cents) VALUES (?, ?)', [
          ctx.id,
          ctx.payload.cents,
        ]);
      }),
    );
    await h.queue.publish({ id: 'debit-1', payload: { cents: 1250 } });
    consumer.faults.loseNextAck();
    await consumer.worker.start();
    expect(await consumer.nextOutcome()).toMatchObject({ reason: 'settle-failed' });
    await h.advance(1000);
    expect(await consumer.nextOutcome()).toMatchObject({ deliveryCount: 2, outcome: 'duplicate' });
    const rows = await h.broker.transaction((tx) =>
      tx.query<{ job_id: string; cents: number }>('SELECT job_id, cents FROM ledger'),
    );
    expect(rows).toEqual([{ job_id: 'debit-1', cents: 1250 }]);
  });

  it('an effect may return what tx.run answers, as docs/worker.md writes it', async () => {
    const h = await open();
    await h.broker.transaction((tx) =>
      tx.run('CREATE TABLE ledger (job_id TEXT PRIMARY KEY, cents INTEGER NOT NULL)'),
    );
    const inbox = new TransactionalInbox(h.broker);
    const consumer = h.process<{ cents: number }>(
      inboxHandler(inbox, 'ledger', (tx, ctx) =>
        tx.run('INSERT INTO ledger (job_id, cents) VALUES (?, ?)', [ctx.id, ctx.payload.cents]),
      ),
    );
    await h.queue.publish({ id: 'debit-1', payload: { cents: 1250 } });
    await consumer.worker.runOnce();
    expect(await consumer.nextOutcome()).toMatchObject({ id: 'debit-1', outcome: 'acked' });
    const rows = await h.broker.transaction((tx) =>
      tx.query<{ job_id: string; cents: number }>('SELECT job_id, cents FROM ledger'),
    );
    expect(rows).toEqual([{ job_id: 'debit-1', cents: 1250 }]);
  });

  it('an effect that throws rolls its claim back: the retry runs it', async () => {
    const h = await open();
    const inbox = new TransactionalInbox(h.broker);
    await expect(
      inbox.processOnce('c', 'job-1', async () => {
        throw new Error('constraint failed');
      }),
    ).rejects.toThrow('constraint failed');
    expect(await inbox.processOnce('c', 'job-1', () => 'done')).toEqual({
      processed: true,
      value: 'done',
    });
    expect(await inbox.processOnce('c', 'job-1', () => 'again')).toEqual({ processed: false });
  });
});

describeEngines(memory, 'the transactional inbox without transactions', (open) => {
  it('fails with UnsupportedError on storage without transactions', async () => {
    const h = await open();
    const inbox = new TransactionalInbox(h.broker);
    await expect(inbox.processOnce('c', 'job-1', () => 1)).rejects.toBeInstanceOf(UnsupportedError);
  });
});
