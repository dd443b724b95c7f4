import { createHash, createHmac } from 'node:crypto';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLogs } from '../server/helpers.js';
import { arn, failure, type SqsTestServer, startSqsServer } from './helpers.js';

const ADMIN = { id: 'admin', secret: 'admin-secret-0123456789' };
const PRODUCER = { id: 'producer', secret: 'producer-secret-0123456' };
const OWNER = { id: 'owner', secret: 'owner-secret-0123456789' };
const MOVER = { id: 'mover', secret: 'mover-secret-0123456789' };
const WATCHER = { id: 'watcher', secret: 'watcher-secret-01234567' };
let server: SqsTestServer;
let admin: SQSClient;
let producer: SQSClient;

beforeAll(async () => {
  server = await startSqsServer({
    keys: [
      { name: ADMIN.id, key: ADMIN.secret, allow: [{ queues: '*', actions: ['admin'] }] },
      {
        name: PRODUCER.id,
        key: PRODUCER.secret,
        allow: [{ queues: 'orders-*', actions: ['publish'] }],
      },
      {
        name: OWNER.id,
        key: OWNER.secret,
        allow: [{ queues: 'own-*', actions: ['admin'] }],
      },
      {
        name: MOVER.id,
        key: MOVER.secret,
        allow: [
          { queues: 'own-*', actions: ['admin'] },
          { queues: 'billing-*', actions: ['publish'] },
        ],
      },
      {
        name: WATCHER.id,
        key: WATCHER.secret,
        allow: [
          { queues: 'own-*', actions: ['admin'] },
          { queues: 'billing-*', actions: ['read'] },
        ],
      },
      {
        name: 'digest',
        sha256: 'f6550e5bba56db5706b7957b5737010ac2b05d70da621d7de84527afc5e55be8',
        allow: [{ queues: '*', actions: ['admin'] }],
      },
    ],
  });
  admin = server.clientWith(ADMIN.id, ADMIN.secret);
  producer = server.clientWith(PRODUCER.id, PRODUCER.secret);
  for (const QueueName of ['orders-1', 'other-1']) {
    await admin.send(new CreateQueueCommand({ QueueName }));
  }
});

afterAll(async () => {
  await server.close();
});

const urlOf = (name: string) => `${server.baseUrl}/sqs/000000000000/${name}`;

describe('SigV4 with keys configured', () => {
  it('verifies signatures: access key id = key name, secret = key', async () => {
    const sent = await producer.send(
      new SendMessageCommand({ QueueUrl: urlOf('orders-1'), MessageBody: 'signed' }),
    );
    expect(sent.MessageId).toBeDefined();
    const wrongSecret = server.clientWith(PRODUCER.id, 'not-the-secret-at-all');
    expect(await failure(wrongSecret.send(new ListQueuesCommand({})))).toMatchObject({
      name: 'SignatureDoesNotMatch',
      status: 403,
    });
    const unknown = server.clientWith('nobody', 'whatever-secret-here');
    expect((await failure(unknown.send(new ListQueuesCommand({})))).name).toBe(
      'InvalidClientTokenId',
    );
    const digestOnly = server.clientWith('digest', 'digest-secret-0123456789');
    const refused = await failure(digestOnly.send(new ListQueuesCommand({})));
    expect(refused.name).toBe('InvalidClientTokenId');
    expect(refused.message).toContain('SHA-256');
  });

  it('refuses unsigned requests and signatures more than 15 minutes off', async () => {
    const unsigned = await fetch(`${server.baseUrl}/sqs/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.ListQueues',
      },
      body: '{}',
    });
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get('x-amzn-query-error')).toBe('MissingAuthenticationToken;Sender');
    const late = new SQSClient({
      endpoint: `${server.baseUrl}/sqs`,
      region: 'us-east-1',
      credentials: { accessKeyId: ADMIN.id, secretAccessKey: ADMIN.secret },
      systemClockOffset: -60 * 60 * 1000,
      maxAttempts: 1,
    });
    const expired = await failure(late.send(new ListQueuesCommand({})));
    late.destroy();
    expect(expired.name).toBe('SignatureDoesNotMatch');
    expect(expired.message).toContain('15 minutes');
  });

  it('says a signature that no longer matches may come from a proxy that changed the Host or the path', async () => {
    const { host, hostname, port } = new URL(server.baseUrl);
    /** A client whose requests go out as a proxy in front of the server passes them on. */
    const proxied = (endpoint: string, passOn: (request: Record<string, unknown>) => void) => {
      const client = new SQSClient({
        endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: ADMIN.id, secretAccessKey: ADMIN.secret },
        maxAttempts: 1,
      });
      type Middleware = Parameters<typeof client.middlewareStack.addRelativeTo>[0];
      const proxy = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
        passOn((args as { request: Record<string, unknown> }).request);
        return next(args);
      };
      client.middlewareStack.addRelativeTo(proxy as unknown as Middleware, {
        relation: 'after',
        toMiddleware: 'httpSigningMiddleware',
        name: 'proxy',
      });
      return client;
    };
    // One serving the server under a path prefix, one passing the upstream's name as Host.
    const prefixed = proxied(`${server.baseUrl}/leaseq/sqs`, (request) => {
      request.path = String(request.path).replace(/^\/leaseq/, '');
    });
    const renamed = proxied('http://queues.example.com/sqs', (request) => {
      Object.assign(request, { hostname, port: Number(port) });
      (request.headers as Record<string, string>).host = host;
    });
    try {
      for (const client of [prefixed, renamed]) {
        const refused = await failure(client.send(new ListQueuesCommand({})));
        expect(refused).toMatchObject({ name: 'SignatureDoesNotMatch', status: 403 });
        expect(refused.message).toContain(
          'no proxy on the way changed the Host header or the path',
        );
      }
    } finally {
      prefixed.destroy();
      renamed.destroy();
    }
  });

  it('signed requests to the QueueUrl origin (path /) verify too', async () => {
    const origin = new SQSClient({
      region: 'eu-west-1',
      credentials: { accessKeyId: PRODUCER.id, secretAccessKey: PRODUCER.secret },
      logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      maxAttempts: 1,
    });
    const sent = await origin.send(
      new SendMessageCommand({ QueueUrl: urlOf('orders-1'), MessageBody: 'via origin' }),
    );
    origin.destroy();
    expect(sent.MessageId).toBeDefined();
  });

  it('maps rights onto the per-queue permissions', async () => {
    const receive = await failure(
      producer.send(new ReceiveMessageCommand({ QueueUrl: urlOf('orders-1') })),
    );
    expect(receive).toMatchObject({ name: 'AccessDenied', status: 403 });
    const elsewhere = await failure(
      producer.send(new SendMessageCommand({ QueueUrl: urlOf('other-1'), MessageBody: 'x' })),
    );
    expect(elsewhere.name).toBe('AccessDenied');
    expect(
      (await failure(producer.send(new CreateQueueCommand({ QueueName: 'orders-2' })))).name,
    ).toBe('AccessDenied');
    const visible = await producer.send(new ListQueuesCommand({}));
    expect(visible.QueueUrls).toEqual([urlOf('orders-1')]);
    const all = await admin.send(new ListQueuesCommand({}));
    expect(all.QueueUrls).toEqual([urlOf('orders-1'), urlOf('other-1')]);
    const received = await admin.send(
      new ReceiveMessageCommand({ QueueUrl: urlOf('orders-1'), MaxNumberOfMessages: 10 }),
    );
    expect(received.Messages?.map((message) => message.Body).sort()).toEqual([
      'signed',
      'via origin',
    ]);
  });

  it('takes a RedrivePolicy only to a queue the key may send to (else AccessDenied, nothing changed)', async () => {
    const owner = server.clientWith(OWNER.id, OWNER.secret);
    const RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:other-1',
      maxReceiveCount: 1,
    });
    const create = await failure(
      owner.send(new CreateQueueCommand({ QueueName: 'own-1', Attributes: { RedrivePolicy } })),
    );
    expect(create).toMatchObject({ name: 'AccessDenied', status: 403 });
    expect(create.message).toContain('may not publish on it');
    expect((await server.broker.listQueues()).map((info) => info.name)).not.toContain('own-1');
    await owner.send(new CreateQueueCommand({ QueueName: 'own-1' }));
    const set = await failure(
      owner.send(
        new SetQueueAttributesCommand({ QueueUrl: urlOf('own-1'), Attributes: { RedrivePolicy } }),
      ),
    );
    expect(set).toMatchObject({ name: 'AccessDenied', status: 403 });
    expect((await (await server.broker.queue('own-1')).options()).deadLetterQueue).toBeUndefined();
  });

  it('moves messages back to their source queues only for a key that may send to each (else AccessDenied naming no source the key may not see, nothing moved)', async () => {
    await admin.send(new CreateQueueCommand({ QueueName: 'own-dlq' }));
    await admin.send(
      new CreateQueueCommand({
        QueueName: 'billing-1',
        Attributes: {
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: arn('own-dlq'),
            maxReceiveCount: 1,
          }),
        },
      }),
    );
    const billing = await server.broker.queue('billing-1');
    await billing.publish({ id: 'invoice-9' });
    const [delivery] = await billing.receive();
    await billing.nack(delivery?.token as number, { requeue: false, reason: 'fraud' });
    const dlq = await server.broker.queue('own-dlq');
    expect((await dlq.stats()).ready).toBe(1);
    const owner = server.clientWith(OWNER.id, OWNER.secret);
    const denied = await failure(
      owner.send(new StartMessageMoveTaskCommand({ SourceArn: arn('own-dlq') })),
    );
    expect(denied).toMatchObject({ name: 'AccessDenied', status: 403 });
    // The owner may not see billing-1 (ListDeadLetterSourceQueues leaves it out): not named.
    expect(denied.message).not.toContain('billing-1');
    expect(denied.message).toContain('own-dlq');
    const watcher = server.clientWith(WATCHER.id, WATCHER.secret);
    const seen = await failure(
      watcher.send(new StartMessageMoveTaskCommand({ SourceArn: arn('own-dlq') })),
    );
    expect(seen).toMatchObject({ name: 'AccessDenied', status: 403 });
    expect(seen.message).toContain('billing-1');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await dlq.stats()).ready).toBe(1);
    expect((await billing.stats()).ready).toBe(0);
    const mover = server.clientWith(MOVER.id, MOVER.secret);
    await mover.send(new StartMessageMoveTaskCommand({ SourceArn: arn('own-dlq') }));
    for (let attempt = 0; attempt < 100 && (await billing.stats()).ready === 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await billing.stats()).ready).toBe(1);
    expect((await dlq.stats()).ready).toBe(0);
  });

  it('refuses a signature whose SignedHeaders leave out host or an x-amz-* header sent, so a captured request cannot be replayed as another action', async () => {
    const host = new URL(server.baseUrl).host;
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const hmac = (key: Buffer | string, text: string) =>
      createHmac('sha256', key).update(text).digest();
    /** A JSON request signed by hand over `signed` only, as a client of its own might sign it. */
    const signedRequest = (
      target: string,
      body: string,
      signed: string[],
      extra: Record<string, string> = {},
    ) => {
      const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
      const date = amzDate.slice(0, 8);
      const headers: Record<string, string> = {
        host,
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-date': amzDate,
        'x-amz-target': `AmazonSQS.${target}`,
        ...extra,
      };
      const canonical = [
        'POST',
        '/sqs/',
        '',
        signed.map((name) => `${name}:${headers[name]}\n`).join(''),
        signed.join(';'),
        sha256(body),
      ].join('\n');
      const scope = `${date}/us-east-1/sqs/aws4_request`;
      const key = ['us-east-1', 'sqs', 'aws4_request'].reduce(
        (secret: Buffer, part) => hmac(secret, part),
        hmac(`AWS4${ADMIN.secret}`, date),
      );
      const signature = hmac(
        key,
        ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n'),
      ).toString('hex');
      const { host: _, ...sent } = headers;
      return {
        ...sent,
        authorization: `AWS4-HMAC-SHA256 Credential=${ADMIN.id}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`,
      };
    };
    const post = async (headers: Record<string, string>, body: string) => {
      const answer = await fetch(`${server.baseUrl}/sqs/`, { method: 'POST', headers, body });
      return { status: answer.status, error: answer.headers.get('x-amzn-query-error') };
    };
    const body = JSON.stringify({ QueueUrl: urlOf('other-1') });
    const all = ['content-type', 'host', 'x-amz-date', 'x-amz-target'];
    expect((await post(signedRequest('GetQueueAttributes', body, all), body)).status).toBe(200);
    const refused = { status: 403, error: 'SignatureDoesNotMatch;Sender' };
    for (const signed of [
      ['x-amz-date'],
      ['content-type', 'x-amz-date', 'x-amz-target'],
      ['content-type', 'host', 'x-amz-date'],
    ]) {
      const captured = signedRequest('GetQueueAttributes', body, signed);
      expect(await post(captured, body), signed.join(';')).toEqual(refused);
      const replayed = { ...captured, 'x-amz-target': 'AmazonSQS.PurgeQueue' };
      expect(await post(replayed, body), signed.join(';')).toEqual(refused);
    }
    const token = { 'x-amz-security-token': 'session' };
    expect(await post(signedRequest('GetQueueAttributes', body, all, token), body)).toEqual(
      refused,
    );
    expect(
      (
        await post(
          signedRequest('GetQueueAttributes', body, [...all, 'x-amz-security-token'], token),
          body,
        )
      ).status,
    ).toBe(200);
  });

  it('hashes the body as received: a stated X-Amz-Content-Sha256 cannot carry another body', async () => {
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    /** A client whose signed requests are changed after signing, as a captured request would be. */
    const tampering = (change: (body: string) => { body: string; stated: string }) => {
      const client = server.clientWith(ADMIN.id, ADMIN.secret);
      type Middleware = Parameters<typeof client.middlewareStack.addRelativeTo>[0];
      const tamper = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
        const request = (
          args as { request: { body: string | Uint8Array; headers: Record<string, string> } }
        ).request;
        const signed =
          typeof request.body === 'string' ? request.body : new TextDecoder().decode(request.body);
        const { body, stated } = change(signed);
        request.body = body;
        request.headers['x-amz-content-sha256'] = stated;
        request.headers['content-length'] = String(Buffer.byteLength(body));
        return next(args);
      };
      client.middlewareStack.addRelativeTo(tamper as unknown as Middleware, {
        relation: 'after',
        toMiddleware: 'httpSigningMiddleware',
        name: 'tamper',
      });
      return client;
    };
    const swapped = tampering((signed) => ({
      body: signed.replace('"signed body"', '"forged body"'),
      stated: sha256(signed),
    }));
    const refused = await failure(
      swapped.send(
        new SendMessageCommand({ QueueUrl: urlOf('other-1'), MessageBody: 'signed body' }),
      ),
    );
    expect(refused).toMatchObject({ name: 'SignatureDoesNotMatch', status: 403 });
    expect(refused.message).toContain('X-Amz-Content-Sha256');
    const empty = await admin.send(new ReceiveMessageCommand({ QueueUrl: urlOf('other-1') }));
    expect(empty.Messages ?? []).toEqual([]);
    // The header stating the body's true hash is taken, as AWS takes it.
    const honest = tampering((signed) => ({ body: signed, stated: sha256(signed) }));
    const sent = await honest.send(
      new SendMessageCommand({ QueueUrl: urlOf('other-1'), MessageBody: 'signed body' }),
    );
    expect(sent.MessageId).toBeDefined();
  });
});

describe('SQS logs with keys configured', () => {
  it('names the key on every line of a request, and logs a message given back, as /v1 does', async () => {
    const { lines, logger } = captureLogs();
    const logged = await startSqsServer({
      logger,
      keys: [{ name: ADMIN.id, key: ADMIN.secret, allow: [{ queues: '*', actions: ['admin'] }] }],
    });
    try {
      const client = logged.clientWith(ADMIN.id, ADMIN.secret);
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: 'logged-1' }));
      await client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
      const { Messages } = await client.send(new ReceiveMessageCommand({ QueueUrl }));
      await client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl,
          ReceiptHandle: Messages?.[0]?.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
      const seen = lines.filter((line) => line.msg === 'delivered' || line.msg === 'requeued');
      expect(seen.map((line) => [line.msg, line.key])).toEqual([
        ['delivered', ADMIN.id],
        ['requeued', ADMIN.id],
      ]);
    } finally {
      await logged.close();
    }
  });
});
