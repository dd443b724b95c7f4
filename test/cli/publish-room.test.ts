import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishJobBytes, publishRoom } from '../../src/client/index.js';
import { openRemote, type PublishInput, RemoteError } from '../../src/index.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { leaseq } from './context.js';

// `leaseq publish --file` cuts its batches by the client's own measure of a publish: the room
// publishRoom gives is what the client takes in one publish, to the byte, on either transport.

const MAX_BODY = 8 * 1024;

let server: TestServer;
let env: Record<string, string>;
let dir: string;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer({ limits: { maxBodyBytes: MAX_BODY, maxPayloadBytes: MAX_BODY } });
  env = { LEASEQ_SERVER: server.baseUrl };
  dir = mkdtempSync(join(tmpdir(), 'leaseq-cli-room-'));
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `job` with a payload of x's that makes it take `bytes` in a publish, by publishJobBytes. */
function sized(job: PublishInput, bytes: number): PublishInput {
  const job0 = { ...job, payload: '' };
  const sizedJob = { ...job, payload: 'x'.repeat(bytes - publishJobBytes(job0)) };
  expect(publishJobBytes(sizedJob)).toBe(bytes);
  return sizedJob;
}

const ROOM_SAID = /at most (\d+) bytes of jobs, its maxBodyBytes being 8192/;

describe('publishRoom and publishJobBytes, the measure publish --file cuts by', () => {
  for (const transport of ['stream', 'http'] as const) {
    it(`hold jobs that fill a publish to the byte, and the client refuses one byte more (${transport})`, async () => {
      const name = `room${++counter}`;
      await server.broker.queue(name);
      const room = publishRoom(transport, name, MAX_BODY);
      expect(room).toBeGreaterThan(MAX_BODY - 200);
      expect(room).toBeLessThan(MAX_BODY);

      // The command line says the room the client has.
      const far = join(dir, `far-${transport}.jsonl`);
      writeFileSync(far, `${JSON.stringify({ payload: 'x'.repeat(2 * MAX_BODY) })}\n`);
      const refused = await leaseq(['publish', name, '--file', far, '--transport', transport], {
        env,
      });
      expect(refused.code).toBe(1);
      expect(ROOM_SAID.exec(refused.stderr)?.[1], refused.stderr).toBe(String(room));

      const client = await openRemote(server.baseUrl, { transport });
      try {
        const queue = client.handle(name);
        // One job, the defaults filled in by the client; two, with a comma between them.
        await queue.publishBatch([sized({ id: 'one' }, room)]);
        const first = sized({ id: 'two-a', priority: 5, group: 'g' }, 1000);
        await queue.publishBatch([first, sized({ id: 'two-b', delay: 10 }, room - 1000 - 1)]);
        for (const over of [
          [sized({ id: 'over' }, room + 1)],
          [first, sized({ id: 'over-b', delay: 10 }, room - 1000)],
        ]) {
          const error = await queue.publishBatch(over).catch((caught: unknown) => caught);
          expect(error).toBeInstanceOf(RemoteError);
          expect(error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
        }
      } finally {
        await client.close();
      }
      const stored = await (await server.broker.queue(name)).inspect();
      expect([...stored.ready, ...stored.delayed.map((job) => job.id)].sort()).toEqual(
        ['one', 'two-a', 'two-b'].sort(),
      );
    });
  }
});
