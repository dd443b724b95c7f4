import { join } from 'node:path';
import {
  ChangeMessageVisibilityCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll } from 'vitest';
import { postgresUrl, useConformanceEngines } from '../conformance/engines.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../server/helpers.js';
import { temporaryDirectory } from '../temporary-directory.js';

export interface SqsTestServer extends TestServer {
  /** An SDK client of the endpoint `<base>/sqs`. */
  client: SQSClient;
  /** A client with other credentials (for keys). */
  clientWith(accessKeyId: string, secretAccessKey: string): SQSClient;
}

/** A real server with the SQS endpoint on, and the AWS SDK pointed at it. */
export async function startSqsServer(options: TestServerOptions = {}): Promise<SqsTestServer> {
  const server = await startTestServer({ sqs: {}, ...options });
  const clients: SQSClient[] = [];
  const clientWith = (accessKeyId: string, secretAccessKey: string) => {
    const client = new SQSClient({
      endpoint: `${server.baseUrl}/sqs`,
      region: 'us-east-1',
      credentials: { accessKeyId, secretAccessKey },
      maxAttempts: 1,
    });
    clients.push(client);
    return client;
  };
  const client = clientWith('test', 'test');
  return {
    ...server,
    client,
    clientWith,
    async close() {
      for (const each of clients) each.destroy();
      await server.close();
    },
  };
}

/** What an SDK call failed with: the error class name, err.Code, the message and the status. */
export async function failure(
  promise: Promise<unknown>,
): Promise<{ name: string; code: string; message: string; status: number }> {
  try {
    await promise;
  } catch (error) {
    const sdk = error as Error & { Code?: string; $metadata?: { httpStatusCode?: number } };
    return {
      name: sdk.name,
      code: sdk.Code ?? '',
      message: sdk.message,
      status: sdk.$metadata?.httpStatusCode ?? 0,
    };
  }
  throw new Error('expected the call to fail');
}

let counter = 0;
/** A queue name unique in this process. */
export function freshName(label = 'q'): string {
  counter += 1;
  return `${label}-${process.pid}-${counter}`;
}

/** An engine the SQS tests run over: its storage URL, or why it is skipped. */
export interface SqsEngine {
  name: string;
  url: string;
  skipReason: string | undefined;
}

/**
 * The engines of the conformance suite (memory, SQLite, PostgreSQL, with their skip rules) as
 * storage URLs for SQS servers; the SQLite file is this test file's own. Call once per file,
 * at the top (top-level await).
 */
export async function useSqsEngines(): Promise<SqsEngine[]> {
  const engines = await useConformanceEngines({ client: false });
  const dir = temporaryDirectory('leaseq-sqs-');
  const urls: Record<string, string> = {
    memory: 'memory:',
    sqlite: `sqlite:${join(dir, 'sqs.db')}`,
    postgres: postgresUrl(),
  };
  return engines.map((engine) => ({
    name: engine.name,
    url: urls[engine.name] as string,
    skipReason: engine.skipReason,
  }));
}

/**
 * An SQS server over `engine` for the tests of one describe block: started before them unless
 * the engine is skipped, closed after them. Tests read it through the returned function.
 */
export function sqsServerFor(
  engine: SqsEngine,
  options: TestServerOptions = {},
): () => SqsTestServer {
  return serverOfBlock(
    () =>
      engine.skipReason === undefined ? startSqsServer({ url: engine.url, ...options }) : undefined,
    `over ${engine.name}`,
  );
}

/** An SQS server on the default storage for the tests of one file or describe block, as sqsServerFor. */
export function sqsServer(options: TestServerOptions = {}): () => SqsTestServer {
  return serverOfBlock(() => startSqsServer(options), 'started');
}

/** A server `start` makes before the block's tests (none: undefined), closed after them. */
function serverOfBlock(
  start: () => Promise<SqsTestServer> | undefined,
  what: string,
): () => SqsTestServer {
  let server: SqsTestServer | undefined;
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => {
    if (server === undefined) throw new Error(`no SQS server ${what}`);
    return server;
  };
}

/** Up to 10 messages at once, without waiting, leased 30 s, with every system attribute. */
export async function receiveNow(client: SQSClient, QueueUrl: string): Promise<Message[]> {
  const { Messages } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 30,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return Messages ?? [];
}

/** Makes a received message visible again at once (VisibilityTimeout 0). */
export function giveBack(client: SQSClient, QueueUrl: string, message: Message) {
  return client.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl,
      ReceiptHandle: message.ReceiptHandle,
      VisibilityTimeout: 0,
    }),
  );
}

/**
 * One query-protocol request to `baseUrl` (a form body, an XML answer), as aws-sdk v2 and
 * botocore before its JSON protocol send it.
 */
export async function queryRequest(
  baseUrl: string,
  params: Record<string, string>,
  path = '/sqs/',
): Promise<{ status: number; type: string | null; xml: string }> {
  const answer = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: new URLSearchParams({ Version: '2012-11-05', ...params }).toString(),
  });
  return {
    status: answer.status,
    type: answer.headers.get('content-type'),
    xml: await answer.text(),
  };
}

/** The text of the first `<name>` element of an XML answer. */
export const xmlField = (xml: string, name: string): string | undefined =>
  new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

/** The ARN the SQS endpoint gives the queue `name` (its region and account are fixed). */
export const arn = (name: string) => `arn:aws:sqs:us-east-1:000000000000:${name}`;
