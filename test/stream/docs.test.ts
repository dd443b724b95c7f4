import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import { call, startTestServer, type TestServer } from '../server/helpers.js';
import { FrameClient } from './frames.js';

/** The session of docs/stream.md: `>` lines sent, `<` lines expected after each. */
const DOC = readFileSync(new URL('../../docs/stream.md', import.meta.url), 'utf8');
const SESSION = /```\n\$ npx wscat[^\n]*\n([\s\S]*?)```/.exec(DOC)?.[1] ?? '';

let server: TestServer | undefined;
const dir = mkdtempSync(join(tmpdir(), 'leaseq-stream-doc-'));
afterEach(async () => {
  await server?.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('docs/stream.md', () => {
  it('replays the example session frame by frame', async () => {
    const lines = SESSION.trim().split('\n');
    expect(lines.length).toBeGreaterThan(10);
    // The doc's deadlines are 30 s after this clock; its receipts are signed with the test secret
    // alone, as on a storage that keeps its jobs (on memory: the secret is bound to the run).
    server = await startTestServer({
      clock: new ManualClock(1_767_225_600_000),
      url: `sqlite:${join(dir, 'doc.db')}`,
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
});
