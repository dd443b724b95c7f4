import { describe, expect, it } from 'vitest';
import { type CheckerName, checkHistory } from './checkers.js';
import { type DeliveryRecord, type FinalState, type Op, payloadHash } from './history.js';

/** Each checker must accept a clean history and find the one fault it is there for. */

const at = (invokedAt: number, completedAt = invokedAt + 1) => ({
  process: 'p',
  invokedAt,
  completedAt,
  outcome: 'ok' as const,
});
const publish = (time: number, ...ids: string[]): Op => ({
  f: 'publish',
  ids,
  payloadHashes: ids.map((id) => payloadHash({ id })),
  ...at(time),
});
const delivery = (
  id: string,
  token: number,
  issuedAt: number,
  extra: Partial<DeliveryRecord> = {},
): DeliveryRecord => ({
  id,
  token,
  issuedAt,
  deadline: issuedAt + 100,
  deliveryCount: 1,
  payloadHash: payloadHash({ id }),
  ...extra,
});
const receive = (time: number, ...deliveries: DeliveryRecord[]): Op => ({
  f: 'receive',
  deliveries,
  ...at(time),
});
const ack = (time: number, id: string, token: number, applied = true): Op => ({
  f: 'ack',
  id,
  token,
  applied,
  ...at(time),
});
const done: FinalState = { dead: [], left: [] };

function failing(ops: Op[], final: FinalState = done): Partial<Record<CheckerName, string[]>> {
  const failed: Partial<Record<CheckerName, string[]>> = {};
  for (const result of checkHistory(ops, final)) {
    if (result.violations.length > 0) failed[result.checker] = result.violations;
  }
  return failed;
}

describe('history checkers', () => {
  it('accept a history where each job is acked once or dead with a reason', () => {
    const ops: Op[] = [
      publish(0, 'a', 'b', 'c'),
      receive(10, delivery('a', 1, 10), delivery('b', 2, 10)),
      ack(20, 'a', 1),
      // b's lease ends at 110; it is delivered again after that, then rejected.
      receive(200, delivery('b', 3, 200, { deliveryCount: 2 })),
      { f: 'reject', id: 'b', token: 3, applied: true, ...at(210) },
      receive(220, delivery('c', 4, 220)),
      // c's ack answer was lost, yet it removed c.
      { f: 'ack', id: 'c', token: 4, ...at(230), outcome: 'unknown' },
      // a publish that never answered and never showed up
      { ...publish(240, 'd'), outcome: 'unknown' },
    ];
    expect(failing(ops, { dead: [{ id: 'b', reason: 'rejected' }], left: [] })).toEqual({});
  });

  it('lost: a published job never delivered and not dead', () => {
    expect(Object.keys(failing([publish(0, 'a')]))).toEqual(['lost']);
  });

  it('redelivered-after-ack: a later token, or a receive called after the ack answered', () => {
    expect(
      failing([
        publish(0, 'a'),
        receive(1, delivery('a', 1, 1)),
        receive(2, delivery('a', 2, 500, { deliveryCount: 2 })),
        ack(600, 'a', 1),
      ])['redelivered-after-ack'],
    ).toEqual([expect.stringMatching(/token 2 was handed out/)]);
    // A token reset (the storage started over) shows as a receive after the ack.
    expect(
      failing([
        publish(0, 'a'),
        receive(1, delivery('a', 5, 1)),
        ack(10, 'a', 5),
        receive(20, delivery('a', 1, 20)),
      ])['redelivered-after-ack'],
    ).toEqual([expect.stringMatching(/delivered again \(token 1\)/)]);
  });

  it('lease-overlap: a second delivery before the first deadline, unless nacked first', () => {
    const ops = [
      publish(0, 'a'),
      receive(10, delivery('a', 1, 10)),
      receive(50, delivery('a', 2, 50, { deliveryCount: 2 })),
      ack(60, 'a', 2),
    ];
    expect(failing(ops)['lease-overlap']).toEqual([
      expect.stringMatching(/token 2 granted at 50 while token 1 was live until 110/),
    ]);
    const nacked: Op = { f: 'nack', id: 'a', token: 1, applied: true, ...at(40) };
    expect(failing([...ops.slice(0, 2), nacked, ...ops.slice(2)])).toEqual({});
    // An extension moves the deadline the next delivery must wait for.
    const extended: Op = { f: 'extend', id: 'a', token: 1, deadline: 400, ...at(90) };
    const late = [
      publish(0, 'a'),
      receive(10, delivery('a', 1, 10)),
      extended,
      receive(200, delivery('a', 2, 200, { deliveryCount: 2 })),
      ack(210, 'a', 2),
    ];
    expect(Object.keys(failing(late))).toEqual(['lease-overlap']);
  });

  it('lease-overlap: a reservation a storage crash may have lost is no overlap (R21)', () => {
    const crash = (from: number, to: number): Op => ({
      f: 'storage-crash',
      from,
      to,
      ...at(from, to),
    });
    const history = (earlierAt: number, crashFrom: number, crashTo: number, laterAt: number) => [
      publish(0, 'a'),
      receive(earlierAt, delivery('a', 1, earlierAt, { deadline: 10_000 })),
      crash(crashFrom, crashTo),
      receive(laterAt, delivery('a', 2, laterAt, { deliveryCount: 2 })),
      ack(laterAt + 10, 'a', 2),
    ];
    const overlap = (earlierAt: number, crashFrom: number, crashTo: number, laterAt: number) =>
      failing(history(earlierAt, crashFrom, crashTo, laterAt))['lease-overlap'];
    // Granted shortly before the crash (or during it), granted again after it began: allowed.
    expect(overlap(600, 1000, 1300, 1400)).toBeUndefined();
    expect(overlap(1200, 1000, 1300, 1400)).toBeUndefined();
    // Not silently: the check says what it excused.
    const overlapCheck = checkHistory(history(600, 1000, 1300, 1400), done).find(
      (result) => result.checker === 'lease-overlap',
    );
    expect(overlapCheck?.excused).toEqual([
      'a: token 2 granted at 1400, token 1 (granted at 600) lost to a storage crash',
    ]);
    // Granted long before the crash: its commit was flushed, so the crash cannot explain it.
    expect(overlap(10, 2000, 2300, 2400)).toEqual([expect.stringMatching(/token 2 granted/)]);
    // Granted again before the crash began, or first granted after the storage was back.
    expect(overlap(600, 1000, 1300, 900)).toEqual([expect.stringMatching(/token 2 granted/)]);
    expect(overlap(1350, 1000, 1300, 1400)).toEqual([expect.stringMatching(/token 2 granted/)]);
  });

  it('token-twice: one token for two deliveries', () => {
    expect(
      Object.keys(
        failing([
          publish(0, 'a', 'b'),
          receive(1, delivery('a', 1, 1), delivery('b', 1, 1)),
          ack(2, 'a', 1),
          ack(3, 'b', 1),
        ]),
      ),
    ).toEqual(['token-twice']);
  });

  it('payload-changed: a delivery with another payload than published', () => {
    expect(
      Object.keys(
        failing([
          publish(0, 'a'),
          receive(1, delivery('a', 1, 1, { payloadHash: payloadHash({ id: 'b' }) })),
          ack(2, 'a', 1),
        ]),
      ),
    ).toEqual(['payload-changed']);
  });

  it('end-state: acked twice, acked and dead, left behind, gone unacked, unexpected', () => {
    const twice = failing([
      publish(0, 'a'),
      receive(1, delivery('a', 1, 1)),
      ack(2, 'a', 1),
      ack(3, 'a', 1),
    ])['end-state'];
    expect(twice).toEqual(['a: acked 2 times (each answered true)']);
    const deadToo = failing([publish(0, 'a'), receive(1, delivery('a', 1, 1)), ack(2, 'a', 1)], {
      dead: [{ id: 'a', reason: 'max-deliveries' }],
      left: [],
    })['end-state'];
    expect(deadToo).toEqual(['a: acked, and dead (max-deliveries)']);
    expect(failing([publish(0, 'a')], { dead: [], left: ['a'] })['end-state']).toEqual([
      'a: still ready, delayed or active after the drain',
    ]);
    expect(failing([publish(0, 'a'), receive(1, delivery('a', 1, 1))])['end-state']).toEqual([
      'a: gone from the storage, but no ack answered true and none was lost',
    ]);
    expect(failing([receive(1, delivery('x', 1, 1))])['end-state']).toEqual([
      'x: delivered or stored, but nobody published it',
    ]);
  });
});
