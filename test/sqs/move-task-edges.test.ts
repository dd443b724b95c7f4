import {
  CancelMessageMoveTaskCommand,
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { arn, failure, freshName, sqsServer, sqsServerFor, useSqsEngines } from './helpers.js';

const engines = await useSqsEngines();
const server = sqsServer();

async function create(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await server().client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  return QueueUrl as string;
}

/** A dead-letter queue (of a fresh source queue) of the given type. */
async function deadLetterQueue(fifo: boolean): Promise<{ name: string; url: string }> {
  const suffix = fifo ? '.fifo' : '';
  const attributes: Record<string, string> = fifo
    ? { FifoQueue: 'true', ContentBasedDeduplication: 'true' }
    : {};
  const name = `${freshName('dlq')}${suffix}`;
  const url = await create(name, attributes);
  await create(`${freshName('src')}${suffix}`, {
    ...attributes,
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(name), maxReceiveCount: 1 }),
  });
  return { name, url };
}

async function count(QueueUrl: string): Promise<string | undefined> {
  const { Attributes } = await server().client.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Attributes?.ApproximateNumberOfMessages;
}

describe('message move task edges', () => {
  it('a rate limited task is COMPLETED as soon as it has moved every message, and cannot be cancelled then', async () => {
    const dlq = await deadLetterQueue(false);
    const destination = freshName('to');
    const destinationUrl = await create(destination);
    await server().client.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: 'one' }));
    const { TaskHandle } = await server().client.send(
      new StartMessageMoveTaskCommand({
        SourceArn: arn(dlq.name),
        DestinationArn: arn(destination),
        MaxNumberOfMessagesPerSecond: 1,
      }),
    );
    let task: { Status?: string; ApproximateNumberOfMessagesMoved?: number } | undefined;
    for (let attempt = 0; attempt < 400; attempt++) {
      const { Results } = await server().client.send(
        new ListMessageMoveTasksCommand({ SourceArn: arn(dlq.name) }),
      );
      task = Results?.[0];
      if (task?.ApproximateNumberOfMessagesMoved === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(task).toMatchObject({ ApproximateNumberOfMessagesMoved: 1, Status: 'COMPLETED' });
    const cancel = await failure(
      server().client.send(new CancelMessageMoveTaskCommand({ TaskHandle: TaskHandle as string })),
    );
    expect(cancel.name).toBe('ResourceNotFoundException');
    expect(await count(destinationUrl)).toBe('1');
  });

  it('a task whose source queue is deleted is FAILED and moves nothing of a queue made again under that name', async () => {
    const dlq = await deadLetterQueue(false);
    const destination = freshName('to');
    const destinationUrl = await create(destination);
    for (const body of ['one', 'two', 'three', 'four', 'five']) {
      await server().client.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: body }));
    }
    await server().client.send(
      new StartMessageMoveTaskCommand({
        SourceArn: arn(dlq.name),
        DestinationArn: arn(destination),
        MaxNumberOfMessagesPerSecond: 1,
      }),
    );
    const tasks = async () =>
      (
        await server().client.send(
          new ListMessageMoveTasksCommand({ SourceArn: arn(dlq.name), MaxResults: 10 }),
        )
      ).Results ?? [];
    for (let attempt = 0; attempt < 400; attempt++) {
      if (((await tasks())[0]?.ApproximateNumberOfMessagesMoved ?? 0) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await server().client.send(new DeleteQueueCommand({ QueueUrl: dlq.url }));
    await create(dlq.name);
    await server().client.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: 'new' }));
    const [old] = await tasks();
    expect(old).toMatchObject({ Status: 'FAILED' });
    expect(old?.FailureReason).toContain('deleted');
    expect(old?.TaskHandle).toBeUndefined();

    // The queue made again runs a task of its own, which alone takes its message.
    await server().client.send(
      new StartMessageMoveTaskCommand({
        SourceArn: arn(dlq.name),
        DestinationArn: arn(destination),
      }),
    );
    for (let attempt = 0; attempt < 400; attempt++) {
      if ((await tasks())[0]?.Status !== 'RUNNING') break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const [fresh, failed] = await tasks();
    expect(fresh).toMatchObject({ Status: 'COMPLETED', ApproximateNumberOfMessagesMoved: 1 });
    expect(failed).toMatchObject({ Status: 'FAILED' });
    const movedBefore = failed?.ApproximateNumberOfMessagesMoved ?? 0;
    expect(movedBefore).toBeLessThan(5);
    expect(await count(dlq.url)).toBe('0');
    expect(await count(destinationUrl)).toBe(String(movedBefore + 1));
  });

  it('ListMessageMoveTasks of a queue that does not exist is ResourceNotFoundException, as StartMessageMoveTask', async () => {
    const missing = arn(freshName('missing'));
    const list = await failure(
      server().client.send(new ListMessageMoveTasksCommand({ SourceArn: missing })),
    );
    expect(list).toMatchObject({ name: 'ResourceNotFoundException', status: 404 });
    const start = await failure(
      server().client.send(new StartMessageMoveTaskCommand({ SourceArn: missing })),
    );
    expect(start.name).toBe('ResourceNotFoundException');
    const dlq = await deadLetterQueue(false);
    const { Results } = await server().client.send(
      new ListMessageMoveTasksCommand({ SourceArn: arn(dlq.name) }),
    );
    expect(Results ?? []).toEqual([]);
  });

  it('a destination of the other queue type is InvalidParameterValue and nothing moves', async () => {
    const standardDlq = await deadLetterQueue(false);
    await server().client.send(
      new SendMessageCommand({ QueueUrl: standardDlq.url, MessageBody: 'standard' }),
    );
    const fifoDestination = `${freshName('to')}.fifo`;
    const fifoUrl = await create(fifoDestination, { FifoQueue: 'true' });
    const toFifo = await failure(
      server().client.send(
        new StartMessageMoveTaskCommand({
          SourceArn: arn(standardDlq.name),
          DestinationArn: arn(fifoDestination),
        }),
      ),
    );
    expect(toFifo).toMatchObject({ name: 'InvalidParameterValue', status: 400 });

    const fifoDlq = await deadLetterQueue(true);
    await server().client.send(
      new SendMessageCommand({ QueueUrl: fifoDlq.url, MessageBody: 'fifo', MessageGroupId: 'g' }),
    );
    const standardDestination = freshName('to');
    const standardUrl = await create(standardDestination);
    const toStandard = await failure(
      server().client.send(
        new StartMessageMoveTaskCommand({
          SourceArn: arn(fifoDlq.name),
          DestinationArn: arn(standardDestination),
        }),
      ),
    );
    expect(toStandard).toMatchObject({ name: 'InvalidParameterValue', status: 400 });

    // Nothing started, nothing moved.
    for (const source of [standardDlq.name, fifoDlq.name]) {
      const { Results } = await server().client.send(
        new ListMessageMoveTasksCommand({ SourceArn: arn(source) }),
      );
      expect(Results ?? []).toEqual([]);
    }
    expect(await count(standardDlq.url)).toBe('1');
    expect(await count(fifoDlq.url)).toBe('1');
    expect(await count(fifoUrl)).toBe('0');
    expect(await count(standardUrl)).toBe('0');
  });
});

describe.each(engines)('message move tasks over $name', (engine) => {
  const storageServer = sqsServerFor(engine);

  it('starts of one source at once: one task runs, every other start is UnsupportedOperation', async () => {
    const { client } = storageServer();
    const dlq = freshName('dlq');
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: dlq }));
    await client.send(
      new CreateQueueCommand({
        QueueName: freshName('src'),
        Attributes: {
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn(dlq), maxReceiveCount: 1 }),
        },
      }),
    );
    const destination = freshName('to');
    await client.send(new CreateQueueCommand({ QueueName: destination }));
    for (const body of ['one', 'two', 'three']) {
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
    }
    const starts = await Promise.allSettled(
      [1, 2, 3].map(() =>
        client.send(
          new StartMessageMoveTaskCommand({
            SourceArn: arn(dlq),
            DestinationArn: arn(destination),
            MaxNumberOfMessagesPerSecond: 1,
          }),
        ),
      ),
    );
    expect(starts.filter((start) => start.status === 'fulfilled')).toHaveLength(1);
    for (const start of starts) {
      if (start.status === 'rejected') expect(start.reason.name).toBe('UnsupportedOperation');
    }
    const { Results } = await client.send(
      new ListMessageMoveTasksCommand({ SourceArn: arn(dlq), MaxResults: 10 }),
    );
    expect(Results).toHaveLength(1);
    await client.send(new CancelMessageMoveTaskCommand({ TaskHandle: Results?.[0]?.TaskHandle }));
  });
});
