import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_KINDS, type QueueStats } from '../../src/core/index.js';
import { encodeForRequest } from '../../src/server/content-coding.js';
import { ServerMetrics } from '../../src/server/metrics.js';

function stats(index: number): QueueStats {
  return {
    ready: index,
    delayed: 1,
    active: 2,
    dead: 3,
    waiting: 4,
    sessions: 5,
    paused: index % 2 === 1,
    oldestReadyAge: 1500,
    queueTime: 0,
    published: 10,
    duplicates: 11,
    refused: 28,
    deliveries: 12,
    redeliveries: 13,
    acks: 14,
    nacks: 15,
    unworked: 16,
    expiries: 17,
    sessionReleases: 18,
    extensions: 19,
    staleAcks: 20,
    staleNacks: 21,
    staleExtends: 22,
    redriven: 23,
    purged: 24,
    autoAcked: 25,
    cancelled: 26,
    expired: 27,
    deadLetters: { rejected: 2, 'max-deliveries': 1 },
    processingTime: { count: 4, sum: 2500, max: 1250 },
  };
}

describe('/metrics over many queues', () => {
  it('lets the event loop go while it writes thousands of queues, and writes every one', async () => {
    const queues = 3000;
    const all = Array.from({ length: queues }, (_, index): [string, QueueStats] => [
      `q-${index}`,
      stats(index),
    ]);
    let written = false;
    const render = new ServerMetrics()
      .render(async () => all)
      .then((text) => {
        written = true;
        return text;
      });
    // A callback of the next loop turn: other requests' I/O gets in at the same point.
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toBe(false);
    const text = await render;
    expect(text.match(/^leaseq_jobs\{/gm)).toHaveLength(queues * 5);
    expect(text.match(/^leaseq_acks_total\{/gm)).toHaveLength(queues);
    expect(text).toContain('leaseq_jobs{queue="q-2999",state="ready"} 2999');
  });

  it('writes each queue figure with its help, type, labels and unit', async () => {
    const text = await new ServerMetrics().render(async () => [['orders', stats(7)]]);
    const lines = text.split('\n');
    const family = (name: string) => {
      const start = lines.indexOf(
        `# TYPE ${name} ${name.endsWith('_total') ? 'counter' : 'gauge'}`,
      );
      expect(start, name).toBeGreaterThan(0);
      expect(lines[start - 1]).toMatch(new RegExp(`^# HELP ${name} \\S`));
      const series: string[] = [];
      for (let index = start + 1; lines[index]?.startsWith(name); index += 1) {
        series.push(lines[index] as string);
      }
      return series;
    };
    expect(family('leaseq_jobs')).toEqual([
      'leaseq_jobs{queue="orders",state="ready"} 7',
      'leaseq_jobs{queue="orders",state="delayed"} 1',
      'leaseq_jobs{queue="orders",state="active"} 2',
      'leaseq_jobs{queue="orders",state="dead"} 3',
      'leaseq_jobs{queue="orders",state="waiting"} 4',
    ]);
    expect(family('leaseq_sessions')).toEqual(['leaseq_sessions{queue="orders"} 5']);
    expect(family('leaseq_queue_paused')).toEqual(['leaseq_queue_paused{queue="orders"} 1']);
    expect(family('leaseq_oldest_ready_age_seconds')).toEqual([
      'leaseq_oldest_ready_age_seconds{queue="orders"} 1.5',
    ]);
    expect(family('leaseq_unworked_total')).toEqual(['leaseq_unworked_total{queue="orders"} 16']);
    expect(family('leaseq_refused_publishes_total')).toEqual([
      'leaseq_refused_publishes_total{queue="orders"} 28',
    ]);
    expect(family('leaseq_expired_jobs_total')).toEqual([
      'leaseq_expired_jobs_total{queue="orders"} 27',
    ]);
    expect(family('leaseq_dead_letters_total')).toEqual(
      DEAD_LETTER_KINDS.map(
        (kind) =>
          `leaseq_dead_letters_total{queue="orders",reason="${kind}"} ${{ rejected: 2, 'max-deliveries': 1 }[kind as string] ?? 0}`,
      ),
    );
    expect(family('leaseq_processed_total')).toEqual(['leaseq_processed_total{queue="orders"} 4']);
    expect(family('leaseq_processing_seconds_total')).toEqual([
      'leaseq_processing_seconds_total{queue="orders"} 2.5',
    ]);
    expect(family('leaseq_processing_max_seconds')).toEqual([
      'leaseq_processing_max_seconds{queue="orders"} 1.25',
    ]);
    // Families are separated by a blank line, and the text ends with one line break.
    expect(text).toContain('\n\n# HELP leaseq_jobs ');
    expect(text.endsWith(' 1.25\n')).toBe(true);
  });

  it('hands the text of many queues to the connection a piece at a time, never joined whole', async () => {
    const queues = 3000;
    const all = Array.from({ length: queues }, (_, index): [string, QueueStats] => [
      `q-${index}`,
      stats(index),
    ]);
    const metrics = new ServerMetrics();
    const pieces = await metrics.renderPieces(async () => all);
    const text = pieces.join('');
    expect(text.match(/^leaseq_jobs\{/gm)).toHaveLength(queues * 5);
    expect(text).toContain('\n\n# HELP leaseq_jobs ');
    expect(text.endsWith('\n')).toBe(true);
    // At most a thousand queues of one family in a piece: eight series each at most (a
    // leaseq_dead_letters_total per reason kind).
    const longest = Math.max(...pieces.map((piece) => piece.split('\n').length));
    expect(longest).toBeLessThanOrEqual(DEAD_LETTER_KINDS.length * 1000 + 4);
    // Sent as they come, each turned into bytes on its own: never the whole text at once.
    for (const acceptEncoding of [undefined, 'gzip']) {
      const { body, encoding } = encodeForRequest(pieces, acceptEncoding);
      const chunks: Buffer[] = [];
      for await (const chunk of body) chunks.push(chunk as Buffer);
      const sent = Buffer.concat(chunks);
      if (encoding === 'gzip') {
        expect(gunzipSync(sent).toString('utf8')).toBe(text);
      } else {
        expect(sent.toString('utf8')).toBe(text);
        expect(chunks.length).toBeGreaterThan(1);
        expect(Math.max(...chunks.map((chunk) => chunk.length))).toBeLessThan(sent.length / 10);
      }
    }
  });
});
