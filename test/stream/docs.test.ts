import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { open } from '../../src/index.js';
import { INCARNATION_SECRET_NAME } from '../../src/server/receipt-keys.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { temporaryDirectory } from '../temporary-directory.js';
import { FrameClient } from './frames.js';

/** The session of docs/stream.md: `>` lines sent, `<` lines expected after each. */
const DOC = readFileSync(new URL('../../docs/stream.md', import.meta.url), 'utf8');
const SESSION = /```\n\$ npx wscat[^\n]*\n([\s\S]*?)```/.exec(DOC)?.[1] ?? '';
/** The section that says how frames are refused. */
const BAD_FRAMES = /## Bad frames[\s\S]*?(?=\n## )/.exec(DOC)?.[0] ?? '';

let server: TestServer | undefined;
const dir = temporaryDirectory('leaseq-stream-doc-');
afterEach(async () => {
  await server?.close();
});

describe('docs/stream.md', () => {
  it('replays the example session frame by frame', async () => {
    const lines = SESSION.trim().split('\n');
    expect(lines.length).toBeGreaterThan(10);
    // The doc's deadlines are 30 s after this clock; its receipts are signed with the test secret
    // bound to a storage whose value for it is fixed here (made at random at a first start).
    const file = join(dir, 'doc.db');
    await (await open(`sqlite:${file}`)).close();
    const raw = new Database(file);
    raw
      .prepare('INSERT INTO leaseq_secrets (name, current) VALUES (?, ?)')
      .run(INCARNATION_SECRET_NAME, '00'.repeat(32));
    raw.close();
    server = await startTestServer({
      clock: new ManualClock(1_767_225_600_000),
      url: `sqlite:${file}`,
    });
    await call(server.baseUrl, 'PUT', '/v1/queues/emails', { body: {} });
    const client = await FrameClient.open(server.baseUrl);
    const steps: { send?: string; expect: unknown[] }[] = [{ expect: [] }];
    for (const line of lines) {
      if (line.startsWith('> ')) steps.push({ send: line.slice(2), expect: [] });
      else if (line.startsWith('< ')) steps.at(-1)?.expect.push(JSON.parse(line.slice(2)));
      else throw new Error(`not a session line: ${line}`);
    }
    let seen = 0;
    for (const step of steps) {
      if (step.send !== undefined) client.send(step.send);
      const want = seen + step.expect.length;
      await client.next(() => client.frames.length >= want);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Pushes and answers of one step may come in either order.
      const order = (frames: unknown[]) => frames.map((frame) => JSON.stringify(frame)).sort();
      expect(order(client.frames.slice(seen))).toEqual(order(step.expect));
      seen = client.frames.length;
    }
    await client.close();
  });

  it('answers the bad frames it lists with the codes it names, and goes on', async () => {
    server = await startTestServer({
      keys: [
        {
          name: 'admin',
          key: 'stream-admin-key-0123',
          allow: [{ queues: '*', actions: ['admin'] }],
        },
        {
          name: 'shop',
          key: 'stream-shop-key-01234',
          allow: [{ queues: 'orders-*', actions: ['publish'] }],
        },
      ],
    });
    await call(server.baseUrl, 'PUT', '/v1/queues/emails', {
      body: {},
      apiKey: 'stream-admin-key-0123',
    });
    const admin = await FrameClient.open(server.baseUrl, 'stream-admin-key-0123');
    // Refused before its id could be read: the error frame has none.
    const unread = ['{"type":', '[1]', '{"type":"credit","subscription":1,"prefetch":1}'];
    for (const frame of unread) admin.send(frame);
    await admin.next(() => admin.frames.filter((each) => each.type === 'error').length === 3);
    for (const error of admin.frames.filter((each) => each.type === 'error')) {
      expect(error).not.toHaveProperty('id');
      expect(error.error.code).toBe('INVALID_ARGUMENT');
    }
    // The code of the error frame answering `frame`; each id is used once, but by the subscribe
    // refused for reusing one. The page names every code seen.
    const seen = new Set<string>();
    const codes = async (client: FrameClient, frame: { id: number } & Record<string, unknown>) => {
      const answer = client.next((each) => each.type === 'error' && each.id === frame.id);
      client.send(frame);
      const { code } = (await answer).error;
      seen.add(code);
      return code;
    };
    expect(await codes(admin, { type: 'credit', id: 10, subscription: 9, prefetch: 1 })).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await codes(admin, { type: 'unsubscribe', id: 11, subscription: 9 })).toBe(
      'INVALID_ARGUMENT',
    );
    const open = await admin.request({ type: 'subscribe', id: 12, queue: 'emails', prefetch: 1 });
    expect(open.type).toBe('subscribed');
    expect(await codes(admin, { type: 'subscribe', id: 12, queue: 'emails', prefetch: 1 })).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await codes(admin, { type: 'subscribe', id: 13, queue: 'nope', prefetch: 1 })).toBe(
      'NOT_FOUND',
    );
    const stats = [{ type: 'stats' }];
    expect(await codes(admin, { type: 'batch', id: 14, queue: 'nope', operations: stats })).toBe(
      'NOT_FOUND',
    );
    const shop = await FrameClient.open(server.baseUrl, 'stream-shop-key-01234');
    for (const [id, queue] of [
      [1, 'orders-missing'],
      [2, 'emails'],
    ] as const) {
      expect(await codes(shop, { type: 'subscribe', id, queue, prefetch: 1 }), queue).toBe(
        'FORBIDDEN',
      );
    }
    for (const [id, queue] of [
      [3, 'emails'],
      [4, 'nope'],
    ] as const) {
      expect(await codes(shop, { type: 'batch', id, queue, operations: stats }), queue).toBe(
        'FORBIDDEN',
      );
    }
    const answer = await admin.request({
      type: 'batch',
      id: 15,
      queue: 'emails',
      operations: stats,
    });
    expect(answer.results[0].value).toMatchObject({ published: 0, deliveries: 0 });
    expect([...seen].sort()).toEqual(['FORBIDDEN', 'INVALID_ARGUMENT', 'NOT_FOUND']);
    for (const code of seen) expect(BAD_FRAMES, code).toContain(`\`${code}\``);
    await shop.close();
    await admin.close();
  });
});
