import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRejection } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

// The engines' wake-ups stay in the process that hears them: the remote client has none.
const engines = await useConformanceEngines({ client: false });

/** Calls whose step (R3) ends a session that timed out, none of which wakes receivers itself. */
const STEPS: [string, (q: QueueHandle, now: number, session: string) => Promise<unknown>][] = [
  ['a stats read', (q, now) => q.stats(now)],
  ['a receive in no session', (q, now) => q.reserve(now)],
  ['an openSession', (q, now) => q.openSession(now)],
  [
    'a refused heartbeat of the session',
    (q, now, session) =>
      expectRejection(() => q.heartbeat(now, session), SessionClosedError, 'SESSION_CLOSED'),
  ],
];

describeEngines(engines, (h) => {
  describe('R16 a session that times out wakes its queue', () => {
    for (const [label, step] of STEPS) {
      it(`R16 ${label} that ends a session by its timeout wakes the receivers, as a close does`, async () => {
        const q = await h.queue({ visibility: 1000 });
        await q.publish(0, { id: 'a' });
        const session = await q.openSession(0, { timeout: 10 });
        expect(await q.reserve(1, { session })).toHaveLength(1);
        const woken: { at: number; sessionsEnded: readonly string[] | undefined }[] = [];
        let at = 0;
        const stop = h.engine().onWake((queue, served) => {
          if (queue === q.name) woken.push({ at, sessionsEnded: served?.sessionsEnded });
        });
        try {
          // Before the timeout the step ends nothing and wakes nobody.
          at = 9;
          await q.stats(9);
          await new Promise((resolve) => setTimeout(resolve, 0));
          expect(woken).toEqual([]);
          at = 10;
          await step(q, 10, session);
          await new Promise((resolve) => setTimeout(resolve, 0));
          // Served: what the session released was offered to the waiting receives (none here),
          // so that only those of the session need look, to learn of its end.
          expect(woken).toContainEqual({ at: 10, sessionsEnded: [session] });
        } finally {
          stop();
        }
        expect(await q.job('a')).toMatchObject({
          history: [{ token: 1, endedAt: 10, outcome: 'session-ended' }],
        });
      });
    }
  });
});
