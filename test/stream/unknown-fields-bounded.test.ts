import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { FrameClient } from './frames.js';

// A frame's unknown fields are refused as before; the error frame echoes a bounded part of them.

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const each of open.splice(0).reverse()) await each.close();
});

async function refusal(server: TestServer, frame: Record<string, unknown>) {
  const client = await FrameClient.open(server.baseUrl);
  open.push(client);
  client.send(frame);
  const error = await client.next((each) => each.type === 'error');
  return error.error as { code: string; message: string };
}

const many = (count: number) =>
  Object.fromEntries(Array.from({ length: count }, (_, n) => [`field${n}`, 1]));
const LONG = `${'n'.repeat(64)}${'x'.repeat(199_936)}`;
const frame = { type: 'credit', id: 1, subscription: 1, prefetch: 1 };

it('a stream frame with thousands of unknown fields names the first 10 and counts the rest', async () => {
  const server = await startTestServer();
  open.push(server);
  const error = await refusal(server, { ...frame, ...many(5000) });
  expect(error.code).toBe('INVALID_ARGUMENT');
  expect(error.message).toBe(
    [
      ...Array.from({ length: 10 }, (_, n) => `unknown field field${n}`),
      'and 4,990 more unknown fields',
    ].join('; '),
  );
});

it('a stream frame field name of 200,000 characters is shown by its first 64 and its length', async () => {
  const server = await startTestServer();
  open.push(server);
  const error = await refusal(server, { ...frame, [LONG]: 1 });
  expect(error.code).toBe('INVALID_ARGUMENT');
  expect(error.message).toBe(`unknown field ${'n'.repeat(64)}… (200,000 characters)`);
});

it('the operations of a batch frame are bounded as the library bounds them', async () => {
  const server = await startTestServer();
  open.push(server);
  await server.broker.queue('jobs', { visibility: 60_000 });
  const client = await FrameClient.open(server.baseUrl);
  open.push(client);
  const answer = await client.request({
    type: 'batch',
    id: 1,
    queue: 'jobs',
    operations: [{ type: 'stats', ...many(5000) }],
  });
  const message = JSON.stringify(answer);
  expect(message).toContain('INVALID_ARGUMENT');
  expect(message).toContain('unknown field \\"field9\\" of stats; and 4,990 more unknown fields');
  expect(message.length).toBeLessThan(1000);
});
