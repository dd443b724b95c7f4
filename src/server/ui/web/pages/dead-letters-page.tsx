import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { isGone } from '../api.js';
import { formatCount, formatTime, isoTime, visible, visibleId } from '../format.js';
import { type ActionState, ActionStatus, useActions } from '../parts/action-status.js';
import { type Confirmation, ConfirmDialog } from '../parts/confirm-dialog.js';
import { JobLink } from '../parts/job-link.js';
import { ErrorNotice, Loading } from '../parts/notice.js';
import { PageTitle } from '../parts/page-title.js';
import { href, replaceRoute } from '../router.js';
import { can, useSession, useTopic } from '../session.js';
import type { DeadLetter } from '../wire.js';
import { QueueTabs } from './queue-tabs.js';

type Verb = 'Redrive' | 'Purge';

/** How much of a reason the filter's options show (the whole in their title). */
const REASON_CHARS = 60;

const cut = (text: string, chars: number) =>
  text.length > chars ? `${text.slice(0, chars - 1)}…` : text;

const jobs = (count: number) => `${formatCount(count)} ${count === 1 ? 'job' : 'jobs'}`;

/** Runs `verb` on `ids` (at most maxBatch per request), or on every dead job without ids. */
function useRun(queue: string, actions: ActionState, onDone: () => void) {
  const { api, feed } = useSession();
  return async (verb: Verb, ids: string[] | undefined) => {
    const call = verb === 'Redrive' ? api.redrive : api.purge;
    const past = verb === 'Redrive' ? 'Redriven' : 'Purged';
    let done = 0;
    await actions.run(
      `${verb === 'Redrive' ? 'Redriving' : 'Purging'} ${ids === undefined ? 'every dead job' : jobs(ids.length)}…`,
      async () => {
        if (ids === undefined) done = await call(queue);
        else {
          // The server refuses more than its maxBatch ids at once (100 unless configured).
          const perCall = await api.maxBatch();
          for (let at = 0; at < ids.length; at += perCall) {
            done += await call(queue, ids.slice(at, at + perCall));
          }
        }
        return `${past}: ${jobs(done)}.`;
      },
      (why) =>
        done > 0
          ? `${verb} stopped after ${jobs(done)} ${past.toLowerCase()}: ${why}`
          : `${verb} failed: ${why}`,
    );
    onDone();
    feed.refresh();
  };
}

function Row(props: {
  queue: string;
  letter: DeadLetter;
  admin: boolean;
  /** An action is on its way: no other starts until it is answered. */
  busy: boolean;
  selected: boolean;
  onSelect(selected: boolean): void;
  act(verb: Verb): void;
}) {
  const { queue, letter, admin, busy, selected } = props;
  const last = letter.history.at(-1);
  // Quoted where it would look like another id, or like none ("job-1\n", " "): `visibleId`.
  const id = visibleId(letter.id);
  // While an action is on its way the buttons take nothing, yet keep the focus (as a queue's
  // do): a disabled button loses it to the body, and the next Tab would start the page over.
  const unlessBusy = (verb: Verb) => () => {
    if (!busy) props.act(verb);
  };
  return (
    <tr class={selected ? 'selected' : undefined}>
      {admin ? (
        <td class="select">
          <input
            type="checkbox"
            checked={selected}
            aria-label={`Select ${id}`}
            onChange={(event) => props.onSelect(event.currentTarget.checked)}
          />
        </td>
      ) : null}
      <th scope="row">
        <JobLink queue={queue} id={letter.id} />
      </th>
      <td>
        <span class="badge reason clip" title={visible(letter.reason)}>
          {visible(letter.reason)}
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
                <span class="muted clip" title={visible(last.reason)}>
                  {visible(last.reason)}
                </span>
              </>
            ) : null}
            {last.error ? (
              <>
                {' '}
                <span class="muted clip attempt-error" title={visible(last.error)}>
                  {visible(last.error)}
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
            aria-label={`Redrive ${id}`}
            aria-disabled={busy}
            data-verb="Redrive"
            onClick={unlessBusy('Redrive')}
          >
            Redrive
          </button>
          <button
            type="button"
            class="danger-quiet"
            aria-label={`Purge ${id}`}
            aria-disabled={busy}
            data-verb="Purge"
            onClick={unlessBusy('Purge')}
          >
            Purge
          </button>
        </td>
      ) : null}
    </tr>
  );
}

/**
 * A queue's dead letters: filter by reason, redrive or purge one, the selected, or all. The reason
 * filtered by is in the address (`href.deadLetters`), so that Back from a job opened here, a
 * reload or a link filters by it again.
 */
export function DeadLettersPage(props: { queue: string; reason: string }) {
  const { queue, reason } = props;
  const { me } = useSession();
  const admin = can(me, 'admin', queue);
  const update = useTopic({ kind: 'deadLetters', queue });
  const setReason = (chosen: string) => replaceRoute(href.deadLetters(queue, chosen));
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [confirmation, setConfirmation] = useState<Confirmation>();
  const actions = useActions(update);
  const busy = actions.busy !== undefined;
  const run = useRun(queue, actions, () => setSelected(new Set()));
  // The queue is gone (deleted) or was never there: nothing of it to list or act on.
  const gone = isGone(update?.error);
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
  const listed = useRef(shown);
  listed.current = shown;

  // A row's Redrive or Purge, once done, takes its row away, and with it the button that had the
  // focus: the focus goes to the same button of the next row (else of the row before), or to
  // what the page says once none is left, rather than to the body, where the next Tab would
  // start the page over.
  const tbody = useRef<HTMLTableSectionElement>(null);
  const none = useRef<HTMLParagraphElement>(null);
  const left = useRef<{ verb: Verb; id: string; order: string[] } | undefined>(undefined);
  const followFocus = (verb: Verb, id: string) => {
    left.current = { verb, id, order: listed.current.map((letter) => letter.id) };
  };
  useEffect(() => {
    const from = left.current;
    if (from === undefined || shown.some((letter) => letter.id === from.id)) return;
    left.current = undefined;
    // The focus went elsewhere meanwhile (a click, a Tab): it stays there.
    const active = document.activeElement;
    if (active !== null && active !== document.body) return;
    const ids = shown.map((letter) => letter.id);
    const at = from.order.indexOf(from.id);
    const next =
      from.order.slice(at + 1).find((id) => ids.includes(id)) ??
      from.order
        .slice(0, at)
        .reverse()
        .find((id) => ids.includes(id));
    // None of those listed then is left (a reason filter let go, others died): the row now at
    // its place, else the last.
    const index = next === undefined ? Math.min(at, ids.length - 1) : ids.indexOf(next);
    const button = tbody.current?.rows[index]?.querySelector<HTMLElement>(
      `button[data-verb="${from.verb}"]`,
    );
    (button ?? none.current)?.focus();
  });

  /** Asks before acting on the ids named: the very ids the dialog counts, no other. */
  const confirm = (verb: Verb, ids: string[], title: string, confirmed?: () => void) => {
    const count = ids.length;
    setConfirmation({
      title,
      body:
        verb === 'Purge'
          ? `The ${count === 1 ? 'job is' : 'jobs are'} removed for good, with ${count === 1 ? 'its' : 'their'} history. This cannot be undone.`
          : `The ${count === 1 ? 'job goes' : 'jobs go'} to the back of ready with delivery count 0; history is kept.`,
      verb: `${verb} ${jobs(count)}`,
      danger: verb === 'Purge',
      onConfirm: () => {
        confirmed?.();
        void run(verb, ids);
      },
    });
  };
  /**
   * Asks before acting on every dead job, those not listed included: the server acts on the
   * dead set as it is when the request reaches it, so the dialog says so rather than a count.
   */
  const confirmEvery = (verb: Verb) =>
    setConfirmation({
      title: `${verb} every dead job now (at least ${formatCount(deadCount)})?`,
      body:
        verb === 'Purge'
          ? `Every job dead in ${queue} when you confirm is removed for good, with its history: those not listed here too, and any that die meanwhile. This cannot be undone.`
          : `Every job dead in ${queue} when you confirm goes to the back of ready with delivery count 0, history kept: those not listed here too, and any that die meanwhile.`,
      verb: `${verb} every dead job`,
      danger: verb === 'Purge',
      onConfirm: () => void run(verb, undefined),
    });
  const all = (verb: Verb) => {
    const ids = shown.map((letter) => letter.id);
    if (current !== '') confirm(verb, ids, `${verb} ${jobs(ids.length)}?`);
    // Every dead job is listed: those ids, not the dead set when the request arrives, which
    // may hold jobs that died after the dialog counted them.
    else if (!more) confirm(verb, ids, `${verb} all ${jobs(ids.length)}?`);
    else confirmEvery(verb);
  };

  // The toolbar's buttons take nothing while an action is on its way or they have nothing to act
  // on, yet keep the focus (as a row's do): confirmed from the keyboard, the dialog gives it back
  // to its button, which a `disabled` would lose to the body, and the next Tab would start the
  // page over.
  const unless = (off: boolean, act: () => void) => () => {
    if (!off) act();
  };

  return (
    <section aria-labelledby="dead-title">
      <PageTitle id="dead-title">
        <span class="muted">Dead letters of</span> {queue}
      </PageTitle>
      <QueueTabs
        queue={queue}
        current="deadLetters"
        dead={update?.data === undefined ? undefined : deadCount}
      />
      <ActionStatus state={actions} />
      {gone ? (
        <p class="notice">No queue named {queue} that this key can see.</p>
      ) : (
        <ErrorNotice error={update?.error} what="the dead letters" />
      )}
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
                {/* Counted among the dead letters listed: with more dead than listed, a reason's
                    count is not how many died of it, and says so. */}
                {reasons.map(([name, count]) => (
                  <option value={name} key={name} title={visible(name)}>
                    {cut(visible(name), REASON_CHARS)} ({formatCount(count)}
                    {more ? ' listed' : ''})
                  </option>
                ))}
              </select>
            </label>
            {admin ? (
              <div class="toolbar-actions">
                <button
                  type="button"
                  aria-disabled={busy || chosen.length === 0}
                  onClick={unless(busy || chosen.length === 0, () =>
                    confirm('Redrive', chosen, `Redrive ${jobs(chosen.length)}?`),
                  )}
                >
                  Redrive selected ({chosen.length})
                </button>
                <button
                  type="button"
                  class="danger-quiet"
                  aria-disabled={busy || chosen.length === 0}
                  onClick={unless(busy || chosen.length === 0, () =>
                    confirm('Purge', chosen, `Purge ${jobs(chosen.length)}?`),
                  )}
                >
                  Purge selected ({chosen.length})
                </button>
                <button
                  type="button"
                  aria-disabled={busy || shown.length === 0}
                  onClick={unless(busy || shown.length === 0, () => all('Redrive'))}
                >
                  {current === '' ? 'Redrive all' : 'Redrive all shown'}
                </button>
                <button
                  type="button"
                  class="danger"
                  aria-disabled={busy || shown.length === 0}
                  onClick={unless(busy || shown.length === 0, () => all('Purge'))}
                >
                  {current === '' ? 'Purge all' : 'Purge all shown'}
                </button>
              </div>
            ) : null}
          </div>
          {shown.length === 0 ? (
            <p class="empty" tabIndex={-1} ref={none}>
              No dead letters{current === '' ? '' : ` with reason ${visible(current)}`}.
            </p>
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
                <tbody ref={tbody}>
                  {shown.map((letter) => (
                    <Row
                      key={letter.id}
                      queue={queue}
                      letter={letter}
                      admin={admin}
                      busy={busy}
                      selected={selected.has(letter.id)}
                      onSelect={(on) => {
                        const next = new Set(selected);
                        if (on) next.add(letter.id);
                        else next.delete(letter.id);
                        setSelected(next);
                      }}
                      act={(verb) => {
                        const follow = () => followFocus(verb, letter.id);
                        if (verb === 'Purge') {
                          confirm('Purge', [letter.id], `Purge ${jobs(1)}?`, follow);
                          return;
                        }
                        follow();
                        void run(verb, [letter.id]);
                      }}
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
