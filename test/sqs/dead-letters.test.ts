import {
  CancelMessageMoveTaskCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { call, captureLogs } from '../server/helpers.js';
import { until } from '../until.js';
import { arn, failure, freshName, sqsServer, startSqsServer } from './helpers.js';

const server = sqsServer();

const send = <T>(command: T) => server().client.send(command as never) as Promise<never>;

async function create(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await server().client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  return QueueUrl as string;
}

const policy = (target: string, maxReceiveCount: number | string) =>
  JSON.stringify({ deadLetterTargetArn: arn(target), maxReceiveCount });

/** Receives the one message of a queue and makes it visible again at once (a receive used up). */
async function receiveAndReturn(QueueUrl: string) {
  const { Messages } = await server().client.send(
    new ReceiveMessageCommand({
      QueueUrl,
      MessageSystemAttributeNames: ['All'],
      VisibilityTimeout: 30,
    }),
  );
  const [message] = Messages ?? [];
  if (message !== undefined) {
    await server().client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl,
        ReceiptHandle: message.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
  }
  return message;
}

describe('RedrivePolicy (R21)', () => {
  it('maps onto deadLetterQueue and maxDeliveries: the message moves to the DLQ after maxReceiveCount receives, keeping its MessageId', async () => {
    const dlqName = freshName('dlq');
    const dlqUrl = await create(dlqName);
    const name = freshName('src');
    const url = await create(name, { RedrivePolicy: policy(dlqName, '2') });
    const v1 = await call(server().baseUrl, 'GET', `/v1/queues/${name}`);
    expect(v1.body.options).toMatchObject({ deadLetterQueue: dlqName, maxDeliveries: 2 });
    const { Attributes } = await server().client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['RedrivePolicy'] }),
    );
    expect(JSON.parse(Attributes?.RedrivePolicy as string)).toEqual({
      deadLetterTargetArn: arn(dlqName),
      maxReceiveCount: 2,
    });
    // The same policy opens the queue again; another is QueueNameExists.
    expect(await create(name, { RedrivePolicy: policy(dlqName, 2) })).toBe(url);
    expect((await failure(create(name, { RedrivePolicy: policy(dlqName, 3) }))).name).toBe(
      'QueueNameExists',
    );

    const { MessageId } = await server().client.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: 'poison' }),
    );
    expect((await receiveAndReturn(url))?.Attributes?.ApproximateReceiveCount).toBe('1');
    expect((await receiveAndReturn(url))?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(await receiveAndReturn(url)).toBeUndefined();
    const dead = await receiveAndReturn(dlqUrl);
    expect(dead).toMatchObject({ MessageId, Body: 'poison' });
    expect(dead?.Attributes).toMatchObject({
      ApproximateReceiveCount: '1',
      DeadLetterQueueSourceArn: arn(name),
    });

    const sources = await server().client.send(
      new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }),
    );
    expect(sources.queueUrls).toEqual([url]);
  });

  it('refuses a missing target, a bad policy and a loop; an empty policy removes it', async () => {
    const name = freshName('src');
    const url = await create(name);
    const missing = await failure(
      send(
        new SetQueueAttributesCommand({
          QueueUrl: url,
          Attributes: { RedrivePolicy: policy(freshName('none'), 3) },
        }),
      ),
    );
    expect(missing).toMatchObject({ name: 'InvalidParameterValue' });
    for (const bad of ['{', '[]', policy(name, 0), policy(name, 1001), '{"maxReceiveCount":3}']) {
      const refused = await failure(create(freshName('bad'), { RedrivePolicy: bad }));
      expect(refused.name, bad).toBe('InvalidParameterValue');
    }
    const dlqName = freshName('dlq');
    const dlqUrl = await create(dlqName, { RedrivePolicy: policy(name, 5) });
    const loop = await failure(
      send(
        new SetQueueAttributesCommand({
          QueueUrl: url,
          Attributes: { RedrivePolicy: policy(dlqName, 5) },
        }),
      ),
    );
    expect(loop.name).toBe('InvalidParameterValue');
    expect(loop.message).toContain('loop');
    await server().client.send(
      new SetQueueAttributesCommand({ QueueUrl: dlqUrl, Attributes: { RedrivePolicy: '' } }),
    );
    const v1 = await call(server().baseUrl, 'GET', `/v1/queues/${dlqName}`);
    expect(v1.body.options).not.toHaveProperty('deadLetterQueue');
    expect(v1.body.options.maxDeliveries).toBeNull();
  });
});

describe('the log of settlements through SQS', () => {
  it('says each with the job id and token as /v1 does: a batch delete acked, a visibility change extended, a visibility of 0 on the last receive dead-lettered', async () => {
    const { lines, logger } = captureLogs();
    const own = await startSqsServer({ logger });
    onTestFinished(() => own.close());
    const make = async (QueueName: string, Attributes: Record<string, string> = {}) =>
      (await own.client.send(new CreateQueueCommand({ QueueName, Attributes }))).QueueUrl as string;
    await make('logged-dlq');
    const url = await make('logged', { RedrivePolicy: policy('logged-dlq', 1) });
    for (const id of ['a', 'b']) {
      await own.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: id }));
    }
    const { Messages = [] } = await own.client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 2 }),
    );
    const [first, second] = Messages.map((message) => message.ReceiptHandle as string);
    await own.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: first,
        VisibilityTimeout: 60,
      }),
    );
    await own.client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [{ Id: '1', ReceiptHandle: first }],
      }),
    );
    await own.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: second,
        VisibilityTimeout: 0,
      }),
    );
    const settled = lines
      .filter((line) => line.queue === 'logged' && line.msg !== 'delivered')
      .map(({ msg, jobId, token, reason, deadLetterQueue }) => ({
        msg,
        jobId,
        token,
        reason,
        deadLetterQueue,
      }));
    const [a, b] = Messages.map((message) => message.MessageId);
    expect(settled).toEqual([
      { msg: 'extended', jobId: a, token: 1 },
      { msg: 'acked', jobId: a, token: 1 },
      {
        msg: 'dead-lettered',
        jobId: b,
        token: 2,
        reason: 'max-deliveries',
        deadLetterQueue: 'logged-dlq',
      },
    ]);
  });
});

describe('a stale handle of a dead-lettered message', () => {
  it('deletes and changes nothing while the message is in the dead-letter queue; once it is gone the delete succeeds', async () => {
    const dlqName = freshName('dlq');
    const dlqUrl = await create(dlqName);
    const url = await create(freshName('src'), {
      VisibilityTimeout: '1',
      RedrivePolicy: policy(dlqName, 1),
    });
    const { MessageId } = await server().client.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: 'slow work' }),
    );
    const [late] =
      (await server().client.send(new ReceiveMessageCommand({ QueueUrl: url }))).Messages ?? [];
    // The worker is slow: its visibility runs out and the message dies into the DLQ.
    const dlqCount = async () =>
      (
        await server().client.send(
          new GetQueueAttributesCommand({
            QueueUrl: dlqUrl,
            AttributeNames: ['ApproximateNumberOfMessages'],
          }),
        )
      ).Attributes?.ApproximateNumberOfMessages;
    // A receive of the source settles the lease that ran out (and finds nothing).
    const settled = async () => {
      await server().client.send(new ReceiveMessageCommand({ QueueUrl: url }));
      return dlqCount();
    };
    await until(async () => (await settled()) === '1', {
      what: 'the message in the DLQ',
      tries: 200,
    });
    const deleteLate = () =>
      send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: late?.ReceiptHandle }));
    const refused = await failure(deleteLate());
    expect(refused).toMatchObject({ name: 'InvalidParameterValue', status: 400 });
    expect(refused.message).toContain('The receipt handle has expired.');
    const batch = await server().client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [{ Id: 'late', ReceiptHandle: late?.ReceiptHandle }],
      }),
    );
    expect(batch.Failed).toEqual([
      expect.objectContaining({ Id: 'late', Code: 'InvalidParameterValue' }),
    ]);
    const changeLate = (VisibilityTimeout: number) =>
      send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: late?.ReceiptHandle,
          VisibilityTimeout,
        }),
      );
    expect((await failure(changeLate(5))).name).toBe('MessageNotInflight');
    expect(await dlqCount()).toBe('1');
    // Received from the DLQ, a later receive holds it: the old handle is expired there too.
    const [dead] =
      (await server().client.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl }))).Messages ?? [];
    expect(dead?.MessageId).toBe(MessageId);
    expect((await failure(changeLate(0))).name).toBe('InvalidParameterValue');
    expect((await failure(deleteLate())).name).toBe('InvalidParameterValue');
    await server().client.send(
      new DeleteMessageCommand({ QueueUrl: dlqUrl, ReceiptHandle: dead?.ReceiptHandle }),
    );
    expect(await deleteLate()).toEqual(expect.objectContaining({}));
  });
});

describe('message move tasks (R21)', () => {
  async function deadLettered(count: number) {
    const dlqName = freshName('dlq');
    const dlqUrl = await create(dlqName);
    const name = freshName('src');
    const url = await create(name, { RedrivePolicy: policy(dlqName, 1) });
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const sent = await server().client.send(
        new SendMessageCommand({ QueueUrl: url, MessageBody: `m${i}` }),
      );
      ids.push(sent.MessageId as string);
      await receiveAndReturn(url);
    }
    return { dlqName, dlqUrl, name, url, ids };
  }

  it('StartMessageMoveTask sends the messages back to their source with their ids; ListMessageMoveTasks shows it', async () => {
    const { dlqName, dlqUrl, url, ids } = await deadLettered(3);
    const counts = async (QueueUrl: string) =>
      (
        await server().client.send(
          new GetQueueAttributesCommand({
            QueueUrl,
            AttributeNames: ['ApproximateNumberOfMessages'],
          }),
        )
      ).Attributes?.ApproximateNumberOfMessages;
    expect(await counts(dlqUrl)).toBe('3');
    const { TaskHandle } = await server().client.send(
      new StartMessageMoveTaskCommand({ SourceArn: arn(dlqName) }),
    );
    expect(TaskHandle).toEqual(expect.any(String));
    const [task] = await until(
      async () => {
        const results =
          (
            await server().client.send(
              new ListMessageMoveTasksCommand({ SourceArn: arn(dlqName), MaxResults: 10 }),
            )
          ).Results ?? [];
        return results[0]?.Status === 'COMPLETED' ? results : undefined;
      },
      { what: 'the move task to complete', tries: 200 },
    );
    expect(task).toMatchObject({
      Status: 'COMPLETED',
      SourceArn: arn(dlqName),
      ApproximateNumberOfMessagesMoved: 3,
      ApproximateNumberOfMessagesToMove: 3,
    });
    expect(task?.TaskHandle).toBeUndefined();
    expect(await counts(dlqUrl)).toBe('0');
    const { Messages } = await server().client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }),
    );
    expect((Messages ?? []).map((message) => message.MessageId).sort()).toEqual([...ids].sort());
    const done = await failure(
      send(new CancelMessageMoveTaskCommand({ TaskHandle: TaskHandle as string })),
    );
    expect(done.name).toBe('ResourceNotFoundException');
  });

  it('a slow task to a named destination can be cancelled; one task per source; a queue that is no DLQ is refused', async () => {
    const { dlqName, name } = await deadLettered(3);
    const elsewhere = freshName('to');
    await create(elsewhere);
    const { TaskHandle } = await server().client.send(
      new StartMessageMoveTaskCommand({
        SourceArn: arn(dlqName),
        DestinationArn: arn(elsewhere),
        MaxNumberOfMessagesPerSecond: 1,
      }),
    );
    const second = await failure(
      send(new StartMessageMoveTaskCommand({ SourceArn: arn(dlqName) })),
    );
    expect(second.name).toBe('UnsupportedOperation');
    const cancelled = await server().client.send(
      new CancelMessageMoveTaskCommand({ TaskHandle: TaskHandle as string }),
    );
    expect(cancelled.ApproximateNumberOfMessagesMoved).toBeLessThan(3);
    const [task] = await until(
      async () => {
        const results =
          (await server().client.send(new ListMessageMoveTasksCommand({ SourceArn: arn(dlqName) })))
            .Results ?? [];
        return results[0]?.Status === 'CANCELLED' ? results : undefined;
      },
      { what: 'the move task to be cancelled', tries: 200 },
    );
    expect(task).toMatchObject({ DestinationArn: arn(elsewhere), MaxNumberOfMessagesPerSecond: 1 });
    const notDlq = await failure(send(new StartMessageMoveTaskCommand({ SourceArn: arn(name) })));
    expect(notDlq.name).toBe('InvalidParameterValue');
  });
});
