import {
  CreateQueueCommand,
  DeleteMessageCommand,
  type Message,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { call } from '../server/helpers.js';
import { arn, giveBack, receiveNow, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();
const FIVE_MINUTES = 300_000;
/** A random UUID, as SQS's MessageIds are. */
const RANDOM_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let counter = 0;
/** A FIFO queue name unique to this run: PostgreSQL keeps queues between runs. */
function fifoName(label: string): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${counter}.fifo`;
}

describe.each(engines)('FIFO MessageIds over $name', (engine) => {
  // The broker's time: the de-duplication window runs on it, so no test sleeps.
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function fifoQueue(name: string, attributes: Record<string, string> = {}) {
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', ...attributes } }),
    );
    return QueueUrl as string;
  }
  const send = (QueueUrl: string, input: Omit<SendMessageCommandInput, 'QueueUrl'>) =>
    server().client.send(new SendMessageCommand({ QueueUrl, ...input }));
  const order = (QueueUrl: string, MessageBody: string) =>
    send(QueueUrl, { MessageBody, MessageGroupId: 'g', MessageDeduplicationId: 'order-1' });
  const receive = (QueueUrl: string) => receiveNow(server().client, QueueUrl);
  const remove = (QueueUrl: string, message: Message) =>
    server().client.send(
      new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message.ReceiptHandle }),
    );

  it('the same de-duplication id sent to two FIFO queues gives two messages with MessageIds of their own', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const first = await fifoQueue(fifoName('ids-a'));
    const second = await fifoQueue(fifoName('ids-b'));
    const inFirst = await order(first, 'for a');
    const inSecond = await order(second, 'for b');
    expect(inFirst.MessageId).toMatch(RANDOM_UUID);
    expect(inSecond.MessageId).toMatch(RANDOM_UUID);
    expect(inSecond.MessageId).not.toBe(inFirst.MessageId);
    // Each queue's message is received with the MessageId its send answered.
    const [a] = await receive(first);
    const [b] = await receive(second);
    expect(a).toMatchObject({ Body: 'for a', MessageId: inFirst.MessageId });
    expect(b).toMatchObject({ Body: 'for b', MessageId: inSecond.MessageId });
    // A repeated send is still a duplicate in its own queue, answered with that queue's message.
    expect((await order(first, 'again')).MessageId).toBe(inFirst.MessageId);
    expect((await order(second, 'again')).MessageId).toBe(inSecond.MessageId);
  });

  it('ContentBasedDeduplication: the same body in two FIFO queues gives two MessageIds', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const attributes = { ContentBasedDeduplication: 'true' };
    const first = await fifoQueue(fifoName('body-a'), attributes);
    const second = await fifoQueue(fifoName('body-b'), attributes);
    const one = await send(first, { MessageBody: 'same body', MessageGroupId: 'g' });
    const two = await send(second, { MessageBody: 'same body', MessageGroupId: 'g' });
    expect(two.MessageId).not.toBe(one.MessageId);
    expect((await receive(second))[0]?.MessageId).toBe(two.MessageId);
  });

  it('a send after the de-duplication window is a new message with a new MessageId', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue(fifoName('later'));
    const original = await order(url, 'first');
    const [message] = await receive(url);
    expect(message?.MessageId).toBe(original.MessageId);
    await remove(url, message as Message);
    // Deleted less than 5 minutes ago: a duplicate, not enqueued, each repeat answered alike.
    clock.advance(FIVE_MINUTES - 1);
    const repeat = await order(url, 'repeat');
    expect(repeat.SequenceNumber).toBe(original.SequenceNumber);
    expect((await order(url, 'repeat again')).MessageId).toBe(repeat.MessageId);
    expect(await receive(url)).toEqual([]);
    clock.advance(1);
    const fresh = await order(url, 'second');
    expect(fresh.MessageId).toMatch(RANDOM_UUID);
    expect(fresh.MessageId).not.toBe(original.MessageId);
    expect(fresh.MessageId).not.toBe(repeat.MessageId);
    const [again] = await receive(url);
    expect(again).toMatchObject({ Body: 'second', MessageId: fresh.MessageId });
  });

  it('SendMessageBatch: entries of one de-duplication id share the first entry MessageId, other entries get their own', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue(fifoName('batch'));
    const other = await fifoQueue(fifoName('batch-other'));
    const elsewhere = await order(other, 'elsewhere');
    const answer = await server().client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'one', MessageBody: '1', MessageGroupId: 'g', MessageDeduplicationId: 'order-1' },
          { Id: 'two', MessageBody: '2', MessageGroupId: 'g', MessageDeduplicationId: 'order-2' },
          {
            Id: 'repeat',
            MessageBody: '3',
            MessageGroupId: 'g',
            MessageDeduplicationId: 'order-1',
          },
        ],
      }),
    );
    const byId = Object.fromEntries((answer.Successful ?? []).map((each) => [each.Id, each]));
    expect(byId.repeat?.MessageId).toBe(byId.one?.MessageId);
    expect(new Set([byId.one?.MessageId, byId.two?.MessageId, elsewhere.MessageId]).size).toBe(3);
    const [received] = await receive(url);
    expect(received).toMatchObject({ Body: '1', MessageId: byId.one?.MessageId });
  });

  it('sends of one new de-duplication id at once are answered with one MessageId, and one message is enqueued', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const url = await fifoQueue(fifoName('race'));
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) => order(url, `copy ${index}`)),
    );
    const ids = new Set(answers.map((answer) => answer.MessageId));
    expect(ids.size).toBe(1);
    expect(new Set(answers.map((answer) => answer.SequenceNumber)).size).toBe(1);
    const received = await receive(url);
    expect(received.map((message) => message.MessageId)).toEqual([...ids]);
  });

  it('a message keeps its MessageId when it dies into the dead-letter queue', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlqName = fifoName('dlq');
    const dlq = await fifoQueue(dlqName);
    const source = await fifoQueue(fifoName('src'), {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    });
    const sent = await order(source, 'dies');
    const [message] = await receive(source);
    await giveBack(server().client, source, message as Message);
    const [dead] = await receive(dlq);
    expect(dead).toMatchObject({ Body: 'dies', MessageId: sent.MessageId });
    // Dead and sent less than 5 minutes ago: a repeated send is a duplicate of it.
    expect((await order(source, 'again')).MessageId).toBe(sent.MessageId);
  });

  it('two FIFO queues sharing a dead-letter queue: messages of one de-duplication id from both die into it', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const dlqName = fifoName('shared-dlq');
    const dlq = await fifoQueue(dlqName);
    const redrive = {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlqName), maxReceiveCount: 1 }),
    };
    const firstName = fifoName('shared-a');
    const secondName = fifoName('shared-b');
    const first = await fifoQueue(firstName, redrive);
    const second = await fifoQueue(secondName, redrive);
    // One group each: a receive of the dead-letter queue takes one message of a group.
    const fromFirst = await send(first, {
      MessageBody: 'from a',
      MessageGroupId: 'a',
      MessageDeduplicationId: 'order-1',
    });
    const fromSecond = await send(second, {
      MessageBody: 'from b',
      MessageGroupId: 'b',
      MessageDeduplicationId: 'order-1',
    });
    for (const url of [first, second]) {
      const [message] = await receive(url);
      expect(message).toBeDefined();
      await giveBack(server().client, url, message as Message);
    }
    const dead = await receive(dlq);
    expect(
      dead
        .map((message) => [
          message.Body,
          message.MessageId,
          message.Attributes?.DeadLetterQueueSourceArn,
        ])
        .sort(),
    ).toEqual([
      ['from a', fromFirst.MessageId, arn(firstName)],
      ['from b', fromSecond.MessageId, arn(secondName)],
    ]);
    // Neither stayed behind in its source queue's own dead set.
    for (const name of [firstName, secondName]) {
      expect((await (await server().broker.queue(name)).stats()).dead).toBe(0);
    }
  });

  it('a job published through v1 with the payload of a FIFO message is received with its own job id as MessageId', async (context) => {
    if (engine.skipReason !== undefined) context.skip(engine.skipReason);
    const name = fifoName('copied');
    const url = await fifoQueue(name);
    const otherName = fifoName('copied-to');
    const other = await fifoQueue(otherName);
    const sent = await order(url, 'original');
    // A leaseq worker takes the message and passes its payload on, to this queue and another.
    const taken = await call(server().baseUrl, 'POST', `/v1/queues/${name}/receive`, {
      body: {},
    });
    const [delivery] = taken.body.deliveries;
    expect(delivery.payload.sqs.messageId).toBe(sent.MessageId);
    const copies = [];
    for (const [queue, group] of [
      [name, 'copies'],
      [otherName, 'g'],
    ]) {
      const published = await call(server().baseUrl, 'POST', `/v1/queues/${queue}/jobs`, {
        body: { payload: delivery.payload, group },
      });
      expect(published.status).toBe(200);
      copies.push(published.body.id as string);
    }
    const [here] = await receive(url);
    const [there] = await receive(other);
    expect(here).toMatchObject({ Body: 'original', MessageId: copies[0] });
    expect(there).toMatchObject({ Body: 'original', MessageId: copies[1] });
    // The original keeps its own, on receive and for a repeated send.
    await call(server().baseUrl, 'POST', `/v1/queues/${name}/nack`, {
      body: { receipt: delivery.receipt },
    });
    const [again] = await receive(url);
    expect(again).toMatchObject({ Body: 'original', MessageId: sent.MessageId });
    expect((await order(url, 'repeat')).MessageId).toBe(sent.MessageId);
  });
});
