// The SQS endpoint against the /v1 API on one server, in the same run: enqueue N messages in
// batches of 10 (SendMessageBatch vs POST /jobs/batch), then drain them 10 at a time
// (ReceiveMessage + DeleteMessageBatch vs POST /receive + POST /ack/batch), each from C
// concurrent loops. Rounds alternate the order; the table shows the median of the rounds.
// Run: npm run bench:sqs [-- --n 5000 --concurrency 4 --rounds 3 --storage memory:]

import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { open } from '../src/index.js';
import { createApp } from '../src/server/index.js';
import { benchArgs, wholeNumber } from './lib/args.js';
import { formatInteger, markdownTable } from './table.js';

const USAGE = `
usage: npm run bench:sqs [-- options]

The SQS endpoint beside the /v1 API on one server: N messages sent in batches of 10, then
received and deleted 10 at a time, from concurrent loops.

  --n N            messages (default 5000)
  --concurrency N  concurrent loops (default 4)
  --rounds N       rounds, alternating the order; the median is shown (default 3)
  --storage URL    the server's storage (default memory:)
`;
const { values } = benchArgs(USAGE, {
  options: {
    n: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    storage: { type: 'string', default: 'memory:' },
  },
});
const messageCount = wholeNumber('n', values.n, 1);
const concurrency = wholeNumber('concurrency', values.concurrency, 1);
const rounds = wholeNumber('rounds', values.rounds, 1);
const BATCH = 10;
const BODY = 'x'.repeat(100);

interface Api {
  name: string;
  setUp(queue: string): Promise<void>;
  sendBatch(queue: string, bodies: string[]): Promise<void>;
  /** Receives up to 10 and deletes them; returns how many. */
  drainBatch(queue: string): Promise<number>;
}

function sqsApi(baseUrl: string): Api {
  const client = new SQSClient({
    endpoint: `${baseUrl}/sqs`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  const url = (queue: string) => `${baseUrl}/sqs/000000000000/${queue}`;
  return {
    name: 'SQS (AWS SDK v3)',
    async setUp(queue) {
      await client.send(new CreateQueueCommand({ QueueName: queue }));
    },
    async sendBatch(queue, bodies) {
      const Entries = bodies.map((MessageBody, i) => ({ Id: `m${i}`, MessageBody }));
      const answer = await client.send(
        new SendMessageBatchCommand({ QueueUrl: url(queue), Entries }),
      );
      if ((answer.Failed ?? []).length > 0) throw new Error('a send failed');
    },
    async drainBatch(queue) {
      const { Messages = [] } = await client.send(
        new ReceiveMessageCommand({ QueueUrl: url(queue), MaxNumberOfMessages: BATCH }),
      );
      if (Messages.length === 0) return 0;
      const Entries = Messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle }));
      await client.send(new DeleteMessageBatchCommand({ QueueUrl: url(queue), Entries }));
      return Messages.length;
    },
  };
}

function v1Api(baseUrl: string): Api {
  const post = async (path: string, body: unknown, method = 'POST') => {
    const answer = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!answer.ok) throw new Error(`${path}: ${answer.status}`);
    return answer.json() as Promise<{ deliveries?: { receipt: string }[] }>;
  };
  return {
    name: 'leaseq /v1 (fetch)',
    async setUp(queue) {
      await post(`/v1/queues/${queue}`, {}, 'PUT');
    },
    async sendBatch(queue, bodies) {
      await post(`/v1/queues/${queue}/jobs/batch`, {
        jobs: bodies.map((payload) => ({ payload })),
      });
    },
    async drainBatch(queue) {
      const { deliveries = [] } = await post(`/v1/queues/${queue}/receive`, { max: BATCH });
      if (deliveries.length === 0) return 0;
      await post(`/v1/queues/${queue}/ack/batch`, { receipts: deliveries.map((d) => d.receipt) });
      return deliveries.length;
    },
  };
}

/**
 * Messages per second of one phase: C loops repeat `step` (which handles some messages and
 * says how many) until `total` are handled.
 */
async function timed(total: number, step: () => Promise<number>): Promise<number> {
  let claimed = 0;
  let done = 0;
  const started = performance.now();
  const loop = async () => {
    while (claimed < total && done < total) {
      claimed += BATCH;
      const count = await step();
      done += count;
      // A short receive leaves work unclaimed: let another step take it.
      claimed -= BATCH - count;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - started) / 1000;
  if (done < total) throw new Error(`only ${done} of ${total}`);
  return total / seconds;
}

async function measure(api: Api, round: number): Promise<{ send: number; drain: number }> {
  const queue = `bench-${api.name.split(' ')[0]?.replace(/\W/g, '')}-${round}`;
  await api.setUp(queue);
  const bodies = Array.from({ length: BATCH }, () => BODY);
  const send = await timed(messageCount, async () => {
    await api.sendBatch(queue, bodies);
    return BATCH;
  });
  const drain = await timed(messageCount, () => api.drainBatch(queue));
  return { send, drain };
}

const median = (list: number[]) =>
  [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;

const broker = await open(values.storage);
const app = await createApp({
  broker,
  sqs: {},
  receiptSecret: 'bench-secret-of-at-least-32-chars',
});
const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
const apis = [sqsApi(baseUrl), v1Api(baseUrl)];
const results = new Map(
  apis.map((api) => [api.name, { send: [] as number[], drain: [] as number[] }]),
);
try {
  for (let round = 0; round < rounds; round += 1) {
    const order = round % 2 === 0 ? apis : [...apis].reverse();
    for (const api of order) {
      const { send, drain } = await measure(api, round);
      results.get(api.name)?.send.push(send);
      results.get(api.name)?.drain.push(drain);
    }
  }
} finally {
  await app.close();
  await broker.close();
}

const figures = apis.map((api) => {
  const result = results.get(api.name) ?? { send: [], drain: [] };
  return { name: api.name, send: median(result.send), drain: median(result.drain) };
});
const [sqs, v1] = figures as [(typeof figures)[0], (typeof figures)[0]];
console.log(
  `${messageCount} messages of ${BODY.length} bytes, batches of ${BATCH}, ${concurrency} concurrent loops, storage ${values.storage}, median of ${rounds} rounds\n`,
);
console.log(
  markdownTable(
    ['API', 'send msg/s', 'receive+delete msg/s'],
    [
      ...figures.map((f) => [f.name, formatInteger(f.send), formatInteger(f.drain)]),
      ['SQS ÷ /v1', (sqs.send / v1.send).toFixed(2), (sqs.drain / v1.drain).toFixed(2)],
    ],
  ),
);
