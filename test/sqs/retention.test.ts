import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { failure, freshName, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();

describe.each(engines)('MessageRetentionPeriod and queue limits over $name', (engine) => {
  // The broker's time: retention counts on it, so no test sleeps.
  const clock = new ManualClock(Date.now());
  const server = sqsServerFor(engine, { clock });

  async function create(attributes: Record<string, string> = {}): Promise<[string, string]> {
    const name = freshName('keep');
    const { QueueUrl } = await server().client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    return [name, QueueUrl as string];
  }
  const retention = async (QueueUrl: string) =>
    (
      await server().client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['MessageRetentionPeriod'] }),
      )
    ).Attributes?.MessageRetentionPeriod;
  const receive = async (QueueUrl: string) =>
    (
      await server().client.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      )
    ).Messages ?? [];

  it.skipIf(engine.skipReason !== undefined)(
    'a queue keeps messages 4 days by default, as the leaseq retention of its queue (R30)',
    async () => {
      const [name, url] = await create();
      expect(await retention(url)).toBe('345600');
      const queue = await server().broker.queue(name);
      expect((await queue.options()).retention).toBe(345_600_000);
    },
  );

  it.skipIf(engine.skipReason !== undefined)(
    'a message older than the period is never received: it dies as expired, counted',
    async () => {
      const [name, url] = await create({ MessageRetentionPeriod: '60' });
      expect(await retention(url)).toBe('60');
      await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'old' }));
      clock.advance(30_000);
      await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'young' }));
      clock.advance(30_000);
      expect((await receive(url)).map((message) => message.Body)).toEqual(['young']);
      const stats = await (await server().broker.queue(name)).stats();
      expect(stats).toMatchObject({ expired: 1, dead: 1, active: 1 });
    },
  );

  it.skipIf(engine.skipReason !== undefined)(
    'SetQueueAttributes changes the retention; CreateQueue of the queue again must name the same',
    async () => {
      const [name, url] = await create();
      await server().client.send(
        new SetQueueAttributesCommand({
          QueueUrl: url,
          Attributes: { MessageRetentionPeriod: '1209600' },
        }),
      );
      expect(await retention(url)).toBe('1209600');
      expect((await (await server().broker.queue(name)).options()).retention).toBe(1_209_600_000);
      expect(
        await failure(
          server().client.send(
            new CreateQueueCommand({
              QueueName: name,
              Attributes: { MessageRetentionPeriod: '60' },
            }),
          ),
        ),
      ).toMatchObject({ code: 'QueueAlreadyExists' });
      await server().client.send(
        new CreateQueueCommand({
          QueueName: name,
          Attributes: { MessageRetentionPeriod: '1209600' },
        }),
      );
      for (const bad of ['59', '1209601', 'x']) {
        expect(
          await failure(
            server().client.send(
              new SetQueueAttributesCommand({
                QueueUrl: url,
                Attributes: { MessageRetentionPeriod: bad },
              }),
            ),
          ),
        ).toMatchObject({ code: 'InvalidAttributeValue' });
      }
      expect(await retention(url)).toBe('1209600');
    },
  );

  it.skipIf(engine.skipReason !== undefined)(
    'a queue made through /v1 shows its own retention, or the SQS default when it has none',
    async () => {
      const bounded = freshName('v1');
      await server().broker.queue(bounded, { retention: 120_000 });
      const unbounded = freshName('v1');
      await server().broker.queue(unbounded);
      const urlOf = (name: string) => `${server().baseUrl}/sqs/000000000000/${name}`;
      expect(await retention(urlOf(bounded))).toBe('120');
      expect(await retention(urlOf(unbounded))).toBe('345600');
    },
  );

  it.skipIf(engine.skipReason !== undefined)(
    "a full queue (its maxLength, set through /v1) refuses sends with SQS's OverLimit",
    async () => {
      const [name, url] = await create();
      await server().broker.updateQueue(name, { maxLength: 1 });
      await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'a' }));
      expect(
        await failure(
          server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'b' })),
        ),
      ).toMatchObject({ code: 'OverLimit', status: 403 });
      const batch = await server().client.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: [{ Id: 'c', MessageBody: 'c' }],
        }),
      );
      expect(batch.Failed).toMatchObject([{ Id: 'c', Code: 'OverLimit', SenderFault: true }]);
      expect((await receive(url)).map((message) => message.Body)).toEqual(['a']);
    },
  );
});
