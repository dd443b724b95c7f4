import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { MemoryEngine } from '../../src/engine/memory/memory-engine.js';

// docs/http-api.md ("Periodic jobs") as the broker computes it: the times its example answer
// shows, and what it says a cron in a time zone does on the day the clocks go back.

const DOC = readFileSync(new URL('../../docs/http-api.md', import.meta.url), 'utf8');

describe('R25 schedules as docs/http-api.md shows them', () => {
  it('R25 the PUT example answer has the nextAt of its cron, time zone and createdAt', async () => {
    const example = DOC.match(
      /curl -s -X PUT --json '(\{[^']*\})' \\\n\s*\$LEASEQ\/v1\/queues\/([\w-]+)\/schedules\/([\w-]+)\n```\s*```json\n([\s\S]*?)```/,
    );
    expect(example).not.toBeNull();
    const [, body, queueName, name, answer] = example as RegExpMatchArray;
    const shown = JSON.parse(answer as string) as { createdAt: number; nextAt: number };
    const { cron, ...options } = JSON.parse(body as string) as { cron: string };
    const broker = new EngineBroker(new MemoryEngine(), {
      clock: new ManualClock(shown.createdAt),
    });
    try {
      const queue = await broker.queue(queueName as string);
      expect(await queue.schedule(name as string, cron, options)).toEqual(shown);
    } finally {
      await broker.close();
    }
  });

  it('R25 a step in the seconds field of a 6-field cron runs at each passing of the repeated hour', async () => {
    expect(DOC).toContain('`*/30 30 1 * * *` at 01:30:00 and 01:30:30 twice each');
    const from = Date.parse('2025-11-02T04:00:00Z');
    const clock = new ManualClock(from);
    const broker = new EngineBroker(new MemoryEngine(), { clock });
    try {
      const queue = await broker.queue('dst');
      await queue.schedule('halves', '*/30 30 1 * * *', { timezone: 'America/New_York' });
      await queue.schedule('fixed', '0 30 1 * * *', { timezone: 'America/New_York' });
      const scheduler = broker.scheduler();
      const seen: string[] = [];
      while (clock.now() < Date.parse('2025-11-02T08:00:00Z')) {
        clock.advance(10_000);
        for (const { id } of await scheduler.runOnce()) seen.push(id);
      }
      expect(seen).toEqual([
        'fixed@2025-11-02T05:30:00.000Z',
        'halves@2025-11-02T05:30:00.000Z',
        'halves@2025-11-02T05:30:30.000Z',
        'halves@2025-11-02T06:30:00.000Z',
        'halves@2025-11-02T06:30:30.000Z',
      ]);
    } finally {
      await broker.close();
    }
  });
});
