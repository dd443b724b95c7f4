import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { failure, freshName, sqsServerFor, useSqsEngines } from './helpers.js';

/**
 * ChangeMessageVisibility past 12 hours after the receive (the maxLease of queues made through
 * SQS): refused, and the message keeps the visibility it had, as in SQS.
 */

const engines = await useSqsEngines();
const TWELVE_HOURS = 43_200;

describe.each(engines)(
  'a visibility change past 12 hours after the receive over $name',
  (engine) => {
    // The broker's time: the 12-hour bound runs on it, so no test waits for it.
    const clock = new ManualClock(Date.now());
    const server = sqsServerFor(engine, { clock });

    async function receivedMessages(count: number): Promise<{ url: string; messages: Message[] }> {
      const { QueueUrl } = await server().client.send(
        new CreateQueueCommand({ QueueName: freshName('limit') }),
      );
      const url = QueueUrl as string;
      for (let n = 0; n < count; n++) {
        await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m${n}` }));
      }
      const { Messages } = await server().client.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 60,
        }),
      );
      expect(Messages).toHaveLength(count);
      return { url, messages: Messages ?? [] };
    }
    const receiveAgain = async (url: string) =>
      (
        await server().client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          }),
        )
      ).Messages ?? [];

    it('is refused and leaves the message visible again when its visibility timeout ends', async (context) => {
      if (engine.skipReason !== undefined) context.skip(engine.skipReason);
      const { url, messages } = await receivedMessages(1);
      clock.advance(30_000);
      const refused = await failure(
        server().client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: url,
            ReceiptHandle: messages[0]?.ReceiptHandle,
            VisibilityTimeout: TWELVE_HOURS,
          }),
        ),
      );
      expect(refused).toMatchObject({ name: 'InvalidParameterValue', status: 400 });
      expect(refused.message).toContain(
        'Total VisibilityTimeout for the message is beyond the limit [43200 seconds]; the message is left as it was.',
      );
      // The 60 s of the receive still hold: not visible before them, visible after.
      clock.advance(29_000);
      expect(await receiveAgain(url)).toEqual([]);
      clock.advance(2_000);
      const again = await receiveAgain(url);
      expect(again.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount])).toEqual([
        ['m0', '2'],
      ]);
    });

    it('takes a change up to the limit itself, and keeps the message invisible until it', async (context) => {
      if (engine.skipReason !== undefined) context.skip(engine.skipReason);
      const { url, messages } = await receivedMessages(1);
      clock.advance(30_000);
      await server().client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: messages[0]?.ReceiptHandle,
          VisibilityTimeout: TWELVE_HOURS - 30,
        }),
      );
      clock.advance((TWELVE_HOURS - 31) * 1000);
      expect(await receiveAgain(url)).toEqual([]);
      clock.advance(2_000);
      expect((await receiveAgain(url)).map((m) => m.Body)).toEqual(['m0']);
    });

    it('fails only the entries of a batch past the limit, which keep their visibility', async (context) => {
      if (engine.skipReason !== undefined) context.skip(engine.skipReason);
      const { url, messages } = await receivedMessages(2);
      clock.advance(30_000);
      const [past, within] = messages;
      const answer = await server().client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: url,
          Entries: [
            { Id: 'past', ReceiptHandle: past?.ReceiptHandle, VisibilityTimeout: TWELVE_HOURS },
            { Id: 'within', ReceiptHandle: within?.ReceiptHandle, VisibilityTimeout: 3600 },
          ],
        }),
      );
      expect(answer.Successful?.map((entry) => entry.Id)).toEqual(['within']);
      expect(answer.Failed).toEqual([
        expect.objectContaining({ Id: 'past', Code: 'InvalidParameterValue', SenderFault: true }),
      ]);
      expect(answer.Failed?.[0]?.Message).toContain('the message is left as it was');
      clock.advance(31_000);
      expect((await receiveAgain(url)).map((m) => m.Body)).toEqual([past?.Body]);
    });
  },
);
