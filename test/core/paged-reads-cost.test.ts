import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseQueue, type QueueLinks } from '../../src/core/index.js';
import { ReadyList } from '../../src/core/ready-list.js';
import type { JobRecord } from '../../src/core/records.js';
import { ids } from './helpers.js';

/**
 * R24 R26 inspection: a page of a long list, or a step of `moveJobs` (`max`), costs what it
 * reads, not the whole queue: paging through n jobs k at a time is not O(n²). Counted here by
 * what is read of the jobs (their times, their group order, the ready list's items, the dead
 * jobs' places), not by time.
 */

const N = 100_000;

afterEach(() => {
  vi.restoreAllMocks();
});

/** The queue's own job records (private): their reads are counted. */
function records(q: LeaseQueue): JobRecord[] {
  return [...(q as unknown as { jobs: Map<string, JobRecord> }).jobs.values()];
}

/** Counts every read of `field` of the queue's jobs from now on. */
function countReads(q: LeaseQueue, field: 'availableAt' | 'traits'): { reads: number } {
  const counter = { reads: 0 };
  for (const job of records(q)) {
    let value = job[field];
    Object.defineProperty(job, field, {
      get() {
        counter.reads += 1;
        return value;
      },
      set(next) {
        value = next;
      },
    });
  }
  return counter;
}

/** Two queues, `from` and `to`, linked as an engine links its queues (R26). */
function linked(): { from: LeaseQueue; to: LeaseQueue } {
  const from = new LeaseQueue({ visibility: 1_000_000 });
  const to = new LeaseQueue();
  const queues = new Map([
    ['from', from],
    ['to', to],
  ]);
  const links: QueueLinks = {
    admit: (queue, now, transfer) => queues.get(queue)?.admit(now, transfer) === true,
  };
  from.connect('from', links);
  to.connect('to', links);
  return { from, to };
}

/** 100,000 delayed jobs, j0 due last and j99999 first: a heap holds them in no useful order. */
function delayedQueue(q: LeaseQueue): void {
  q.publishBatch(
    0,
    ids(0, N).map((id, i) => ({ id, delay: 1_000 + N - i })),
  );
}

describe('R24 R26 paged reads of long lists', () => {
  it('inspect with a limit of 10 reads the time of few of 100,000 delayed jobs', () => {
    const q = new LeaseQueue();
    delayedQueue(q);
    const counted = countReads(q, 'availableAt');
    const view = q.inspect({ limit: 10 });
    expect(view.delayed).toEqual(
      ids(N - 10, N)
        .reverse()
        .map((id, i) => ({ id, availableAt: 1_001 + i })),
    );
    // A sort of all of them read their times some 2,000,000 times.
    expect(counted.reads).toBeLessThanOrEqual(1_000);
  });

  it('inspect with a limit of 10 reads the group order of few of 100,000 waiting jobs', () => {
    const q = new LeaseQueue();
    // Ten groups, each with one job in play and the rest waiting, in group order.
    q.publishBatch(
      0,
      ids(0, N).map((id, i) => ({ id, group: `g${i % 10}` })),
    );
    const counted = countReads(q, 'traits');
    const view = q.inspect({ limit: 10 });
    expect(view.waiting).toEqual(ids(10, 20));
    expect(view.ready).toEqual(ids(0, 10));
    // A sort of all of them read their group order some 900,000 times.
    expect(counted.reads).toBeLessThanOrEqual(1_000);
  });

  it('moveJobs in steps of 1,000 over 100,000 delayed jobs reads the time of few jobs per step', () => {
    const { from, to } = linked();
    delayedQueue(from);
    const counted = countReads(from, 'availableAt');
    for (let step = 0; step < 3; step++) {
      counted.reads = 0;
      expect(from.moveJobs(1, { to: 'to', max: 1_000 })).toBe(1_000);
      // 1,000 pops from a heap of 100,000 read some 80,000 times; a sort of them all at each
      // step read their times some 2,000,000 times.
      expect(counted.reads).toBeLessThanOrEqual(200_000);
    }
    expect(to.inspect({ limit: 3 }).ready).toEqual(['j99999', 'j99998', 'j99997']);
    expect(to.stats(1).ready).toBe(3_000);
    expect(from.stats(1).delayed).toBe(N - 3_000);
    expect(from.inspect({ limit: 2 }).delayed).toEqual([
      { id: 'j96999', availableAt: 4_001 },
      { id: 'j96998', availableAt: 4_002 },
    ]);
  });

  it('moveJobs in steps of 1,000 over 100,000 ready jobs reads about 1,000 of the ready list per step', () => {
    const { from, to } = linked();
    from.publishBatch(
      0,
      ids(0, N).map((id) => ({ id })),
    );
    let read = 0;
    const values = ReadyList.prototype.values;
    vi.spyOn(ReadyList.prototype, 'values').mockImplementation(function* (
      this: ReadyList<JobRecord>,
    ) {
      for (const item of values.call(this)) {
        read += 1;
        yield item;
      }
    });
    for (let step = 0; step < 3; step++) {
      read = 0;
      expect(from.moveJobs(1, { to: 'to', max: 1_000 })).toBe(1_000);
      // Reading the whole list to choose the jobs and again to drop them read 200,000.
      expect(read).toBeLessThanOrEqual(1_000);
    }
    vi.restoreAllMocks();
    expect(to.inspect().ready).toEqual(ids(0, 3_000));
    expect(from.inspect({ limit: 2 }).ready).toEqual(['j3000', 'j3001']);
    expect(from.stats(1).ready).toBe(N - 3_000);
  });

  it('a page of 10 dead letters after 99,990 of 100,000 looks up the place of few of them', () => {
    const q = new LeaseQueue({ visibility: 1_000_000 });
    q.publishBatch(
      0,
      ids(0, N).map((id) => ({ id })),
    );
    const session = q.openSession(0);
    const taken = q.reserve(0, { max: N, session });
    q.nackUpTo(0, session, (taken.at(-1) as { token: number }).token, { requeue: false });
    const lookups = vi.spyOn(WeakMap.prototype, 'get');
    const page = q.deadLetterPage({ after: String(N - 10), limit: 10, payloads: false });
    // A pass over the dead jobs from the first looked up the place of each: 100,000.
    expect(lookups.mock.calls.length).toBeLessThanOrEqual(20);
    vi.restoreAllMocks();
    expect(page.deadLetters.map((letter) => letter.id)).toEqual(ids(N - 10, N));
    expect(page.next).toBeUndefined();
    const before = q.deadLetterPage({ after: String(N - 20), limit: 10 });
    expect(before.deadLetters.map((letter) => letter.id)).toEqual(ids(N - 20, N - 10));
    expect(before.next).toBe(String(N - 10));
  });
});
