/**
 * Typed payloads: `broker.queue<P>(name)` is a `Queue<P>`. The compiler checks P where payloads
 * go in (publish, publishBatch, schedule) and trusts it where they come out (receive, job, dead
 * letters, the worker's handler); nothing is checked at run time. The type assertions here are
 * checked by `npm run typecheck` (tsconfig.json includes test/): each `@ts-expect-error` line
 * must be refused by the compiler, or the directive itself is an error. The tests run them on
 * the memory engine.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type Broker,
  type DeadLetter,
  type DeadLetterPage,
  type Delivery,
  type Job,
  type JobContext,
  type JobView,
  type OutcomeRecord,
  open,
  type PublishInput,
  type Queue,
  type ReceivedDelivery,
  type RemoteBroker,
  type RemoteQueue,
  type ScheduleOptions,
  type ScheduleView,
  silentLogger,
  Worker,
  work,
} from '../../src/index.js';
import { FaultyQueue, Harness } from '../../src/testing/index.js';

/** The payload of the queue `emails`. */
interface Email {
  to: string;
  subject?: string;
}

/** The payload of another queue. */
interface Invoice {
  cents: number;
}

/** A broker over memory, closed at the end of `body`. */
async function withBroker(body: (broker: Broker) => Promise<void>): Promise<void> {
  const broker = await open('memory:');
  try {
    await body(broker);
  } finally {
    await broker.close();
  }
}

/** The first outcome of `worker`. */
function firstOutcome(worker: Worker<Email>): Promise<OutcomeRecord> {
  return new Promise((resolve) => worker.on('outcome', resolve));
}

describe('typed payloads', () => {
  it('a typed queue checks what is published and types what comes out', async () => {
    await withBroker(async (broker) => {
      const emails = await broker.queue<Email>('emails', { visibility: 600_000 });
      expectTypeOf(emails).toEqualTypeOf<Queue<Email>>();
      expectTypeOf(emails.publish).parameter(0).toEqualTypeOf<PublishInput<Email> | undefined>();

      await emails.publish({ id: 'welcome', payload: { to: 'ada@example.com' } });
      await emails.publishBatch([{ id: 'reminder', payload: { to: 'bob@example.com' } }]);
      // @ts-expect-error: `to` is a string
      await emails.publish({ id: 'wrong-type', payload: { to: 42 } });
      // @ts-expect-error: Email has no `cents`
      await emails.publishBatch([{ id: 'wrong-shape', payload: { cents: 5 } }]);

      const delivered = await emails.receive({ max: 4 });
      expectTypeOf(delivered).toEqualTypeOf<Delivery<Email>[]>();
      expectTypeOf(delivered[0]?.payload).toEqualTypeOf<Email | undefined>();
      // Only the compiler refused them: at run time every payload is stored and handed out as
      // published, which is why a program that receives jobs others publish validates them.
      expect(delivered.map((delivery) => delivery.payload)).toEqual([
        { to: 'ada@example.com' },
        { to: 'bob@example.com' },
        { to: 42 },
        { cents: 5 },
      ]);

      const first = delivered[0] as Delivery<Email>;
      await emails.nack(first.token, { requeue: false, reason: 'bounced' });
      const job = await emails.job('welcome');
      expectTypeOf(job).toEqualTypeOf<JobView<Email> | undefined>();
      expect(job?.payload.to).toBe('ada@example.com');

      const dead = await emails.deadLetters();
      expectTypeOf(dead).toEqualTypeOf<DeadLetter<Email>[]>();
      expect(dead.map((letter) => letter.payload?.to)).toEqual(['ada@example.com']);
      const page = await emails.deadLetterPage();
      expectTypeOf(page).toEqualTypeOf<DeadLetterPage<Email>>();
      expect(page.deadLetters[0]?.payload?.to).toBe('ada@example.com');

      // @ts-expect-error: Email has no `cents`
      expect(dead[0]?.payload?.cents).toBeUndefined();
    });
  });

  it('schedules of a typed queue take and show its payload type', async () => {
    await withBroker(async (broker) => {
      const emails = await broker.queue<Email>('emails');
      const view = await emails.schedule('digest', 60_000, { payload: { to: 'ops@example.com' } });
      expectTypeOf(view).toEqualTypeOf<ScheduleView<Email>>();
      expectTypeOf(emails.schedule)
        .parameter(2)
        .toEqualTypeOf<ScheduleOptions<Email> | undefined>();
      expect(view.payload?.to).toBe('ops@example.com');
      // @ts-expect-error: `to` is a string
      await emails.schedule('wrong', 60_000, { payload: { to: 7 } });
      const names = (await emails.schedules()).map((schedule) => schedule.name);
      expect(names.sort()).toEqual(['digest', 'wrong']);
    });
  });

  it('the worker handler gets the queue payload type without annotations', async () => {
    await withBroker(async (broker) => {
      const emails = await broker.queue<Email>('emails', { visibility: 600_000 });
      await emails.publish({ id: 'welcome', payload: { to: 'ada@example.com' } });
      const sent: string[] = [];
      const worker = await work(
        emails,
        (job, ctx) => {
          expectTypeOf(job).toEqualTypeOf<Job<Email>>();
          expectTypeOf(ctx).toEqualTypeOf<JobContext<Email>>();
          sent.push(job.payload.to);
          // @ts-expect-error: Email has no `cents`
          if (job.payload.cents !== undefined) throw new Error('not an email');
        },
        { logger: silentLogger },
      );
      expectTypeOf(worker).toEqualTypeOf<Worker<Email>>();
      expectTypeOf(worker.queue).toEqualTypeOf<Queue<Email>>();
      const outcome = await firstOutcome(worker);
      await worker.close();
      expect(outcome.outcome).toBe('acked');
      expect(sent).toEqual(['ada@example.com']);
    });
  });

  it('a handler of other payloads does not fit a typed queue', async () => {
    await withBroker(async (broker) => {
      const emails = await broker.queue<Email>('emails');
      const invoiceHandler = (job: Job<Invoice>) => job.payload.cents;
      // @ts-expect-error: the handler takes invoices, the queue holds emails
      const refused = () => work(emails, invoiceHandler);
      // @ts-expect-error: the handler takes invoices, the queue holds emails
      const refusedToo = () => new Worker(emails, invoiceHandler);
      // @ts-expect-error: a type argument of its own does not fit the queue either
      const named = () => work<Invoice>(emails, invoiceHandler);
      // Built but never run: these lines are there for the compiler.
      expect([refused, refusedToo, named].map((made) => typeof made)).toEqual([
        'function',
        'function',
        'function',
      ]);
      // A handler of a wider type fits.
      const anyEmail = (job: Job<{ to: string }>) => job.payload.to;
      const worker = new Worker(emails, anyEmail, { logger: silentLogger });
      expectTypeOf(worker).toEqualTypeOf<Worker<Email>>();
      expect(worker.state).toBe('created');
    });
  });

  it('an untyped queue takes handlers typed on their own, as before', async () => {
    await withBroker(async (broker) => {
      const queue = await broker.queue('invoices', { visibility: 600_000 });
      expectTypeOf(queue).toEqualTypeOf<Queue>();
      expectTypeOf(queue).toEqualTypeOf<Queue<unknown>>();
      await queue.publish({ id: 'i-1', payload: { cents: 250 } });
      await queue.publish({ id: 'anything', payload: 'goes' });
      const billed: number[] = [];
      const bill = (job: Job<Invoice>) => {
        billed.push(job.payload.cents);
      };
      const named = new Worker<Invoice>(queue, bill, { logger: silentLogger });
      const inferred = new Worker(queue, bill, { logger: silentLogger });
      expectTypeOf(named).toEqualTypeOf<Worker<Invoice>>();
      expectTypeOf(inferred).toEqualTypeOf<Worker<Invoice>>();
      expect(await named.runOnce()).toBe(1);
      await named.close();
      expect(billed).toEqual([250]);
      await inferred.close();
    });
  });

  it('a typed queue is a Queue to code that takes any', async () => {
    await withBroker(async (broker) => {
      const emails = await broker.queue<Email>('emails');
      const depth = async (queue: Queue) => (await queue.stats()).ready;
      await emails.publish({ payload: { to: 'ada@example.com' } });
      expect(await depth(emails)).toBe(1);
      const faults = new FaultyQueue(emails);
      expectTypeOf(faults).toEqualTypeOf<FaultyQueue<Email>>();
      expectTypeOf<Queue<Email>>().toMatchTypeOf<Queue>();
      expectTypeOf<Queue>().not.toMatchTypeOf<Queue<Email>>();
      expectTypeOf<Queue<Invoice>>().not.toMatchTypeOf<Queue<Email>>();
      const [delivery] = await faults.receive();
      expect(delivery?.payload.to).toBe('ada@example.com');
      const handle = broker.handle<Email>('emails');
      expectTypeOf(handle).toEqualTypeOf<Queue<Email>>();
      expect(await handle.stats()).toMatchObject({ active: 1 });
    });
  });

  it('the test harness carries the payload type to its processes', async () => {
    const h = await Harness.open<Email>({ queueOptions: { visibility: 600_000 } });
    try {
      expectTypeOf(h.queue).toEqualTypeOf<Queue<Email>>();
      await h.queue.publish({ id: 'welcome', payload: { to: 'ada@example.com' } });
      const sent: string[] = [];
      const consumer = h.process((job) => {
        sent.push(job.payload.to);
      });
      expectTypeOf(consumer.worker).toEqualTypeOf<Worker<Email>>();
      expect(await consumer.worker.runOnce()).toBe(1);
      expect(await consumer.nextOutcome()).toMatchObject({ id: 'welcome', outcome: 'acked' });
      expect(sent).toEqual(['ada@example.com']);
    } finally {
      await h.close();
    }
  });

  it('the remote client queue carries the payload type (compile-time only)', () => {
    type RemoteEmails = Awaited<ReturnType<RemoteBroker['handle']>>;
    expectTypeOf<RemoteEmails>().toEqualTypeOf<RemoteQueue>();
    expectTypeOf<ReturnType<RemoteQueue<Email>['receive']>>().toEqualTypeOf<
      Promise<Delivery<Email>[]>
    >();
    expectTypeOf<ReturnType<RemoteQueue<Email>['receiveWithReceipts']>>().toEqualTypeOf<
      Promise<ReceivedDelivery<Email>[]>
    >();
    expectTypeOf<ReturnType<RemoteQueue<Email>['job']>>().toEqualTypeOf<
      Promise<JobView<Email> | undefined>
    >();
    expectTypeOf<RemoteQueue<Email>>().toMatchTypeOf<Queue<Email>>();
    const typed = (remote: RemoteBroker) => remote.queue<Email>('emails');
    expectTypeOf(typed).returns.toEqualTypeOf<Promise<RemoteQueue<Email>>>();
    const publishWrong = (queue: RemoteQueue<Email>) =>
      // @ts-expect-error: `to` is a string
      queue.publish({ payload: { to: 1 } });
    expect(typeof publishWrong).toBe('function');
  });
});
