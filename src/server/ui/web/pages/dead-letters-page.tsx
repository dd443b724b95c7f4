import { useEffect, useMemo, useState } from 'preact/hooks';
import { formatCount, formatTime, isoTime } from '../format.js';
import { type Confirmation, ConfirmDialog } from '../parts/confirm-dialog.js';
import { JobLink } from '../parts/job-link.js';
import { ErrorNotice, Loading } from '../parts/notice.js';
import { can, useSession, useTopic } from '../session.js';
import type { DeadLetter } from '../wire.js';
import { QueueTabs } from './queue-tabs.js';

type Verb = 'Redrive' | 'Purge';

/** How much of a reason the filter's options show (the whole in their title). */
const REASON_CHARS = 60;

const cut = (text: string, chars: number) =>
  text.length > chars ? `${text.slice(0, chars - 1)}…` : text;

const jobs = (count: number) => `${formatCount(count)} ${count === 1 ? 'job' : 'jobs'}`;

function useActions(queue: string, onDone: (message: string, failed?: boolean) => void) {
  const { api, feed } = useSession();
  return async (verb: Verb, ids: string[] | undefined) => {
    const call = verb === 'Redrive' ? api.redrive : api.purge;
    try {
      let done = 0;
      if (ids === undefined) done = await call(queue);
      else {
        // The server refuses more than its maxBatch ids at once (100 unless configured).
        const perCall = await api.maxBatch();
        for (let at = 0; at < ids.length; at += perCall) {
          done += await call(queue, ids.slice(at, at + perCall));
        }
      }
      onDone(`${verb === 'Redrive' ? 'Redriven' : 'Purged'}: ${jobs(done)}.`);
    } catch (error) {
      onDone(`${verb} failed: ${(error as Error).message}`, true);
    } finally {
      feed.refresh();
    }
  };
}

function Row(props: {
  queue: string;
  letter: DeadLetter;
  admin: boolean;
  selected: boolean;
  onSelect(selected: boolean): void;
  act(verb: Verb): void;
}) {
  const { queue, letter, admin, selected } = props;
  const last = letter.history.at(-1);
  return (
    <tr class={selected ? 'selected' : undefined}>
      {admin ? (
        <td class="select">
          <input
            type="checkbox"
            checked={selected}
            aria-label={`Select ${letter.id}`}
            onChange={(event) => props.onSelect(event.currentTarget.checked)}
          />
        </td>
      ) : null}
      <th scope="row">
        <JobLink queue={queue} id={letter.id} />
      </th>
      <td>
        <span class="badge reason clip" title={letter.reason}>
          {letter.reason}
        </span>
      </td>
      <td class="num">{letter.deliveryCount}</td>
      <td>
        <time dateTime={isoTime(letter.deadAt)}>{formatTime(letter.deadAt)}</time>
      </td>
      <td>
        {last === undefined ? (
          <span class="muted">never delivered</span>
        ) : (
          <>
            <span class={`badge outcome-${last.outcome}`}>{last.outcome}</span>
            {/* A reason that only repeats the outcome (a nack's default) is said once. */}
            {last.reason && last.reason !== last.outcome ? (
              <>
                {' '}
                <span class="muted clip" title={last.reason}>
                  {last.reason}
                </span>
              </>
            ) : null}
          </>
        )}
      </td>
      {admin ? (
        <td class="row-actions">
          <button
            type="button"
            aria-label={`Redrive ${letter.id}`}
            onClick={() => props.act('Redrive')}
          >
            Redrive
          </button>
          <button
            type="button"
            class="danger-quiet"
            aria-label={`Purge ${letter.id}`}
            onClick={() => props.act('Purge')}
          >
            Purge
          </button>
        </td>
      ) : null}
    </tr>
  );
}

/** A queue's dead letters: filter by reason, redrive or purge one, the selected, or all. */
export function DeadLettersPage(props: { queue: string }) {
  const { queue } = props;
  const { me } = useSession();
  const admin = can(me, 'admin', queue);
  const update = useTopic({ kind: 'deadLetters', queue });
  const [reason, setReason] = useState('');
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [confirmation, setConfirmation] = useState<Confirmation>();
  const [message, setMessage] = useState<{ text: string; failed: boolean }>();
  const run = useActions(queue, (text, failed = false) => {
    setMessage({ text, failed });
    setSelected(new Set());
  });
  const letters = update?.data?.deadLetters ?? [];
  // More died than one page holds: the list is the oldest; the total comes with the stats.
  const more = update?.data?.next !== undefined;
  // This queue's figures alone, and only when the page cannot count them itself.
  const total = useTopic(more ? { kind: 'queueStats', queue } : undefined)?.data?.dead;
  // Read apart from the page, the count may lag it: never fewer than the page shows.
  const deadCount = more ? Math.max(total ?? 0, letters.length + 1) : letters.length;
  const reasons = useMemo(() => {
    const counts = new Map<string, number>();
    for (const letter of letters) counts.set(letter.reason, (counts.get(letter.reason) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1]);
  }, [letters]);
  // A reason no dead letter has any more (all of them purged or redriven) filters nothing: the
  // select goes back to all reasons rather than blank, hiding the others.
  const stale =
    reason !== '' && update?.data !== undefined && !reasons.some(([name]) => name === reason);
  useEffect(() => {
    if (stale) setReason('');
  }, [stale]);
  const current = stale ? '' : reason;
  const shown = current === '' ? letters : letters.filter((letter) => letter.reason === current);
  const chosen = shown.filter((letter) => selected.has(letter.id)).map((letter) => letter.id);

  const confirm = (verb: Verb, ids: string[] | undefined, count: number) => {
    const what = ids === undefined ? `all ${jobs(count)}` : jobs(count);
    setConfirmation({
      title: `${verb} ${what}?`,
      body:
        verb === 'Purge'
          ? `The ${count === 1 ? 'job is' : 'jobs are'} removed for good, with ${count === 1 ? 'its' : 'their'} history. This cannot be undone.`
          : `The ${count === 1 ? 'job goes' : 'jobs go'} to the back of ready with delivery count 0; history is kept.`,
      verb: `${verb} ${jobs(count)}`,
      danger: verb === 'Purge',
      onConfirm: () => void run(verb, ids),
    });
  };
  const all = (verb: Verb) =>
    current === ''
      ? confirm(verb, undefined, deadCount)
      : confirm(
          verb,
          shown.map((l) => l.id),
          shown.length,
        );

  return (
    <section aria-labelledby="dead-title">
      <h1 id="dead-title">
        <span class="muted">Dead letters of</span> {queue}
      </h1>
      <QueueTabs
        queue={queue}
        current="deadLetters"
        dead={update?.data === undefined ? undefined : deadCount}
      />
      <p role="status" aria-live="polite" class={message?.failed ? 'notice error' : 'notice-ok'}>
        {message?.text ?? ''}
      </p>
      <ErrorNotice error={update?.error} what="the dead letters" />
      {update?.data === undefined ? (
        update?.error ? null : (
          <Loading what="dead letters" />
        )
      ) : (
        <>
          {more ? (
            <p class="notice">
              Listed: the {formatCount(letters.length)} oldest of {formatCount(deadCount)} dead
              letters. Redrive or purge some to see the next; Redrive all and Purge all act on every
              one.
            </p>
          ) : null}
          <div class="toolbar">
            <label>
              Reason{' '}
              <select value={current} onChange={(event) => setReason(event.currentTarget.value)}>
                <option value="">All reasons ({formatCount(deadCount)})</option>
                {reasons.map(([name, count]) => (
                  <option value={name} key={name} title={name}>
                    {cut(name, REASON_CHARS)} ({formatCount(count)})
                  </option>
                ))}
              </select>
            </label>
            {admin ? (
              <div class="toolbar-actions">
                <button
                  type="button"
                  disabled={chosen.length === 0}
                  onClick={() => confirm('Redrive', chosen, chosen.length)}
                >
                  Redrive selected ({chosen.length})
                </button>
                <button
                  type="button"
                  class="danger-quiet"
                  disabled={chosen.length === 0}
                  onClick={() => confirm('Purge', chosen, chosen.length)}
                >
                  Purge selected ({chosen.length})
                </button>
                <button type="button" disabled={shown.length === 0} onClick={() => all('Redrive')}>
                  {current === '' ? 'Redrive all' : 'Redrive all shown'}
                </button>
                <button
                  type="button"
                  class="danger"
                  disabled={shown.length === 0}
                  onClick={() => all('Purge')}
                >
                  {current === '' ? 'Purge all' : 'Purge all shown'}
                </button>
              </div>
            ) : null}
          </div>
          {shown.length === 0 ? (
            <p class="empty">No dead letters{current === '' ? '' : ` with reason ${current}`}.</p>
          ) : (
            <div class="table-scroll">
              <table>
                <caption class="visually-hidden">
                  Dead jobs of {queue}, in the order they died
                </caption>
                <thead>
                  <tr>
                    {admin ? (
                      <th scope="col" class="select">
                        <input
                          type="checkbox"
                          aria-label="Select all shown"
                          checked={chosen.length === shown.length}
                          onChange={(event) =>
                            setSelected(
                              new Set(event.currentTarget.checked ? shown.map((l) => l.id) : []),
                            )
                          }
                        />
                      </th>
                    ) : null}
                    <th scope="col">Job</th>
                    <th scope="col">Reason</th>
                    <th scope="col" class="num">
                      Delivery count
                    </th>
                    <th scope="col">Died</th>
                    <th scope="col">Last outcome</th>
                    {admin ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {shown.map((letter) => (
                    <Row
                      key={letter.id}
                      queue={queue}
                      letter={letter}
                      admin={admin}
                      selected={selected.has(letter.id)}
                      onSelect={(on) => {
                        const next = new Set(selected);
                        if (on) next.add(letter.id);
                        else next.delete(letter.id);
                        setSelected(next);
                      }}
                      act={(verb) =>
                        verb === 'Purge'
                          ? confirm('Purge', [letter.id], 1)
                          : void run(verb, [letter.id])
                      }
                    />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
      <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} />
    </section>
  );
}
