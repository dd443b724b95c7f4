import { SQSClient } from '@aws-sdk/client-sqs';
import { startTestServer, type TestServer, type TestServerOptions } from '../server/helpers.js';

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
