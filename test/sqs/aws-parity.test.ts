import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { failure, freshName, queryRequest, receiveNow, sqsServer, xmlField } from './helpers.js';

const server = sqsServer();

async function create(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await server().client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  return QueueUrl as string;
}

async function attributesOf(url: string, names = ['All']): Promise<Record<string, string>> {
  const { Attributes } = await server().client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names as never }),
  );
  return Attributes ?? {};
}

const ready = async (url: string) =>
  (await attributesOf(url, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages;

/** A client whose every request carries `X-Amzn-Trace-Id`, as the SDK sends it inside Lambda. */
function tracingClient(trace: string): SQSClient {
  const client = server().clientWith('test', 'test');
  client.middlewareStack.add(
    (next) => async (args) => {
      (args.request as { headers: Record<string, string> }).headers['X-Amzn-Trace-Id'] = trace;
      return next(args);
    },
    { step: 'build', name: 'traceHeader' },
  );
  return client;
}

describe('an empty MessageDeduplicationId', () => {
  it('is refused as invalid on a FIFO queue with ContentBasedDeduplication, not taken as absent', async () => {
    const url = await create(`${freshName('emptydedup')}.fifo`, {
      FifoQueue: 'true',
      ContentBasedDeduplication: 'true',
    });
    const refused = await failure(
      server().client.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: 'a',
          MessageGroupId: 'g',
          MessageDeduplicationId: '',
        }),
      ),
    );
    expect(refused).toMatchObject({ name: 'InvalidParameterValue', status: 400 });
    expect(refused.message).toContain('MessageDeduplicationId');
    expect(await ready(url)).toBe('0');

    const batch = await server().client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'empty', MessageBody: 'b', MessageGroupId: 'g', MessageDeduplicationId: '' },
          { Id: 'none', MessageBody: 'c', MessageGroupId: 'g' },
        ],
      }),
    );
    expect(batch.Failed).toEqual([
      expect.objectContaining({ Id: 'empty', Code: 'InvalidParameterValue', SenderFault: true }),
    ]);
    expect(batch.Successful?.map((entry) => entry.Id)).toEqual(['none']);

    const query = await queryRequest(server().baseUrl, {
      Action: 'SendMessage',
      QueueUrl: url,
      MessageBody: 'd',
      MessageGroupId: 'g',
      MessageDeduplicationId: '',
    });
    expect(query.status).toBe(400);
    expect(xmlField(query.xml, 'Code')).toBe('InvalidParameterValue');
    expect(await ready(url)).toBe('1');
  });
});

describe('SqsManagedSseEnabled', () => {
  it('is true on a new queue unless set to false or the queue names a KMS key', async () => {
    const plain = await create(freshName('sse'));
    expect((await attributesOf(plain)).SqsManagedSseEnabled).toBe('true');
    expect(await attributesOf(plain, ['SqsManagedSseEnabled'])).toEqual({
      SqsManagedSseEnabled: 'true',
    });
    const fifo = await create(`${freshName('sse')}.fifo`, { FifoQueue: 'true' });
    expect((await attributesOf(fifo)).SqsManagedSseEnabled).toBe('true');
    const off = await create(freshName('sse'), { SqsManagedSseEnabled: 'false' });
    expect((await attributesOf(off)).SqsManagedSseEnabled).toBe('false');
    const kms = await create(freshName('sse'), { KmsMasterKeyId: 'alias/aws/sqs' });
    expect(await attributesOf(kms, ['KmsMasterKeyId', 'SqsManagedSseEnabled'])).toEqual({
      KmsMasterKeyId: 'alias/aws/sqs',
      SqsManagedSseEnabled: 'false',
    });
    // CreateQueue again with the value the queue shows names the same queue.
    const name = freshName('sse');
    const made = await create(name);
    expect(await create(name, { SqsManagedSseEnabled: 'true' })).toBe(made);
  });
});

describe('the X-Amzn-Trace-Id header of a send', () => {
  const trace = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
  const own = 'Root=1-67891233-abcdef012345678912345678;Parent=463ac35c9f6413ad;Sampled=0';

  it('is kept as the AWSTraceHeader system attribute of each message it sends', async () => {
    const url = await create(freshName('trace'));
    const client = tracingClient(trace);
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'one' }));
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'a', MessageBody: 'two' },
          {
            Id: 'b',
            MessageBody: 'three',
            // A message's own AWSTraceHeader comes before the header.
            MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: own } },
          },
        ],
      }),
    );
    await server().client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'four' }));
    const received = await receiveNow(server().client, url);
    const traces = Object.fromEntries(
      received.map((message) => [message.Body, message.Attributes?.AWSTraceHeader]),
    );
    expect(traces).toEqual({ one: trace, two: trace, three: own, four: undefined });
  });

  it('is returned when AWSTraceHeader alone is asked for', async () => {
    const url = await create(freshName('trace'));
    await tracingClient(trace).send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x' }));
    const { Messages = [] } = await server().client.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        VisibilityTimeout: 30,
        MessageSystemAttributeNames: ['AWSTraceHeader'],
      }),
    );
    expect(Messages.map((message) => message.Attributes)).toEqual([{ AWSTraceHeader: trace }]);
  });

  it('is not kept past 1024 characters, and the send goes through', async () => {
    const url = await create(freshName('trace'));
    const long = `Root=1-5759e988-${'a'.repeat(1024)}`;
    await tracingClient(long).send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x' }));
    const received = await receiveNow(server().client, url);
    expect(received.map((message) => [message.Body, message.Attributes?.AWSTraceHeader])).toEqual([
      ['x', undefined],
    ]);
  });
});
