import { useEffect, useRef, useState } from 'preact/hooks';
import { isGone } from '../api.js';
import { type AttemptLabels, attemptLabels } from '../attempts.js';
import {
  formatDuration,
  formatRelative,
  formatTime,
  isoTime,
  prettyJson,
  visible,
  visibleId,
  visibleJson,
} from '../format.js';
import { ActionStatus, useActions } from '../parts/action-status.js';
import { type Confirmation, ConfirmDialog } from '../parts/confirm-dialog.js';
import { ErrorNotice, Loading } from '../parts/notice.js';
import { PageTitle } from '../parts/page-title.js';
import { href } from '../router.js';
import { can, useServerNow, useSession, useTopic } from '../session.js';
import type { Attempt, JobView } from '../wire.js';

const PAYLOAD_CHARS = 20_000;

function Timeline(props: { history: Attempt[]; labels: AttemptLabels }) {
  const { history, labels } = props;
  if (history.length === 0) return <p class="empty">No attempt has ended yet.</p>;
  return (
    <ol class="timeline">
      {history.map((attempt, index) => [
        index === 1 && labels.gap !== undefined ? (
          <li key="gap" class="timeline-gap">
            {labels.gap}
          </li>
        ) : null,
        <li key={attempt.token} class={`outcome-${attempt.outcome}`}>
          <div class="timeline-head">
            <strong>{labels.labels[index]}</strong>
            <span class={`badge outcome-${attempt.outcome}`}>{attempt.outcome}</span>
            <span class="mono">token {attempt.token}</span>
          </div>
          <dl class="timeline-facts">
            <div>
              <dt>Delivered</dt>
              <dd>
                <time dateTime={isoTime(attempt.deliveredAt)}>
                  {formatTime(attempt.deliveredAt)}
                </time>
              </dd>
            </div>
            <div>
              <dt>Ended</dt>
              <dd>
                <time dateTime={isoTime(attempt.endedAt)}>{formatTime(attempt.endedAt)}</time>
              </dd>
            </div>
            <div>
              <dt>Held</dt>
              <dd>{formatDuration(attempt.endedAt - attempt.deliveredAt)}</dd>
            </div>
            {attempt.reason ? (
              <div>
                <dt>Reason</dt>
                <dd class="reason-text">{visible(attempt.reason)}</dd>
              </div>
            ) : null}
            {attempt.error ? (
              <div>
                <dt>Error</dt>
                <dd class="reason-text">{visible(attempt.error)}</dd>
              </div>
            ) : null}
          </dl>
        </li>,
      ])}
    </ol>
  );
}

function Facts(props: { job: JobView }) {
  const { job } = props;
  const now = useServerNow();
  const rows: [string, preact.ComponentChildren][] = [
    ['State', <span class={`badge state-${job.state}`}>{job.state}</span>],
    ['Delivery count', job.deliveryCount],
  ];
  if (job.publishedAt !== undefined) {
    rows.push([
      'Published',
      <time dateTime={isoTime(job.publishedAt)}>{formatTime(job.publishedAt)}</time>,
    ]);
  }
  if (job.availableAt !== undefined) {
    rows.push([
      'Ready',
      <time dateTime={isoTime(job.availableAt)}>{formatRelative(job.availableAt, now)}</time>,
    ]);
  }
  if (job.token !== undefined && job.deadline !== undefined) {
    rows.push(['Live token', <span class="mono">{job.token}</span>]);
    rows.push([
      'Deadline',
      <time dateTime={isoTime(job.deadline)} title={formatTime(job.deadline)}>
        {job.deadline <= now ? 'due' : formatRelative(job.deadline, now)}
      </time>,
    ]);
  }
  if (job.group !== undefined) {
    // Only a group's first member is ever ready, delayed or in flight (R24); the rest wait.
    rows.push(['Group', <span class="mono id-text">{visibleId(job.group)}</span>]);
    if (job.groupSeq !== undefined) {
      rows.push([
        'Group sequence',
        <span title="Its number in its queue's group order (R29): lower numbers go first">
          {job.groupSeq}
        </span>,
      ]);
    }
  }
  if (job.priority !== undefined) rows.push(['Priority', job.priority]);
  if (job.state === 'dead') {
    rows.push([
      'Reason',
      job.reason === undefined ? '–' : <span class="reason-text">{visible(job.reason)}</span>,
    ]);
    if (job.deadAt !== undefined)
      rows.push(['Died', <time dateTime={isoTime(job.deadAt)}>{formatTime(job.deadAt)}</time>]);
  }
  if (job.origin !== undefined) {
    // It died in another queue and was moved here, that queue's deadLetterQueue (R26).
    rows.push([
      'Came from',
      <>
        <a href={href.queue(job.origin.queue)}>{job.origin.queue}</a>
        {', where it died: '}
        <span class="reason-text">{visible(job.origin.reason)}</span>
        {' · '}
        <time dateTime={isoTime(job.origin.at)}>{formatTime(job.origin.at)}</time>
      </>,
    ]);
  }
  return (
    <dl class="facts">
      {rows.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** One job: state, payload, and the attempt timeline. */
export function JobPage(props: { queue: string; id: string }) {
  const { queue, id } = props;
  const { api, feed, me } = useSession();
  // Once gone it is read no more (a 404 every 2 s for ever); "Check again" reads it once more.
  const [round, setRound] = useState(0);
  const update = useTopic({ kind: 'job', queue, id }, { untilGone: true, round });
  const [confirmation, setConfirmation] = useState<Confirmation>();
  const actions = useActions(update);
  const busy = actions.busy !== undefined;
  // Redrive or Purge, once done, takes the buttons away (the job is dead no more, or gone), and
  // with them the focus: the page's heading takes it rather than the body, where the next Tab
  // would start the page over. While on its way, they take nothing yet keep it.
  const heading = useRef<HTMLHeadingElement>(null);
  const followFocus = useRef(false);
  const job = update?.data;
  // Acked, purged, moved, or its queue deleted: the feed keeps no state of a job that is gone,
  // and the page stops reading it.
  const gone = isGone(update?.error);
  // The countdown of a delivery in flight needs the server's clock: its queue's figures carry
  // it. Nothing else is read for a job page (never every queue's figures).
  useTopic(job?.deadline === undefined ? undefined : { kind: 'queueStats', queue });
  const act = async (verb: 'Redrive' | 'Purge') => {
    followFocus.current = true;
    const done = await actions.run(
      verb === 'Redrive' ? 'Redriving…' : 'Purging…',
      async () => {
        const count = await (verb === 'Redrive'
          ? api.redrive(queue, [id])
          : api.purge(queue, [id]));
        return count === 1
          ? `${verb === 'Redrive' ? 'Redriven' : 'Purged'}.`
          : 'Nothing changed: the job is no longer dead.';
      },
      (why) => `${verb} failed: ${why}`,
    );
    // Failed, it leaves the buttons, and the focus, where they are.
    if (!done) followFocus.current = false;
    feed.refresh();
  };
  // Quoted where it would look like another id, or like none ("job-1\n", " "): `visibleId`.
  const shownId = visibleId(id);
  // A payload's text may hold characters that show as nothing (a zero-width space, a bidi
  // control): escaped, it is the same JSON.
  const payload =
    job === undefined ? undefined : prettyJson(job.payload, PAYLOAD_CHARS, visibleJson);
  const labels =
    job === undefined
      ? undefined
      : attemptLabels(job.history, job.deliveryCount, job.token !== undefined);
  const canAct = job?.state === 'dead' && can(me, 'admin', queue);
  useEffect(() => {
    if (canAct || !followFocus.current) return;
    followFocus.current = false;
    const active = document.activeElement;
    if (active === null || active === document.body) heading.current?.focus();
  });
  const unlessBusy = (then: () => void) => () => {
    if (!busy) then();
  };
  return (
    <section aria-labelledby="job-title">
      <p class="crumbs">
        <a href={href.queue(queue)}>{queue}</a>
        {job?.state === 'dead' && can(me, 'admin', queue) ? (
          <>
            {' · '}
            <a href={href.deadLetters(queue)}>Dead letters</a>
          </>
        ) : null}
      </p>
      <PageTitle id="job-title" headingRef={heading}>
        <span class="muted">Job</span> <span class="mono id-text">{shownId}</span>
      </PageTitle>
      <ActionStatus state={actions} />
      {gone ? (
        <div class="notice">
          <p class="gone-text" role="status">
            No job <span class="id-text">{shownId}</span> in {queue} now: acked, purged or moved, or
            the queue was deleted ({visible(update?.error?.message ?? '')}). The page no longer
            reads it.
            {/* Changed by each Check again, so that a job still gone is said again. */}
            {update === undefined ? null : ` Checked at ${formatTime(update.at)}.`}
          </p>
          <button type="button" onClick={() => setRound(round + 1)}>
            Check again
          </button>
        </div>
      ) : update?.error && job === undefined ? (
        <ErrorNotice error={update.error} what="this job" />
      ) : job === undefined ? (
        <Loading what="the job" />
      ) : (
        <>
          {update?.error ? (
            <ErrorNotice error={update.error} what="the job's latest state" />
          ) : null}
          <div class="two-columns">
            <section class="panel" aria-labelledby="facts-title">
              <h2 id="facts-title">State</h2>
              <Facts job={job} />
              {canAct ? (
                <div class="toolbar-actions">
                  <button
                    type="button"
                    class="primary"
                    aria-disabled={busy}
                    onClick={unlessBusy(() => void act('Redrive'))}
                  >
                    Redrive
                  </button>
                  <button
                    type="button"
                    class="danger"
                    aria-disabled={busy}
                    onClick={unlessBusy(() =>
                      setConfirmation({
                        title: `Purge ${shownId}?`,
                        body: 'The job is removed for good, with its history. This cannot be undone.',
                        verb: 'Purge 1 job',
                        danger: true,
                        onConfirm: () => void act('Purge'),
                      }),
                    )}
                  >
                    Purge
                  </button>
                </div>
              ) : null}
            </section>
            <section class="panel" aria-labelledby="payload-title">
              <h2 id="payload-title">Payload</h2>
              <pre class="payload">{payload?.text}</pre>
              {payload?.cut ? (
                <p class="muted">Cut at {PAYLOAD_CHARS.toLocaleString()} characters.</p>
              ) : null}
            </section>
          </div>
          <section class="panel" aria-labelledby="attempts-title">
            <h2 id="attempts-title">
              {`Attempts (${job.history.length}${labels?.gap === undefined ? '' : ' kept'})`}
            </h2>
            <Timeline history={job.history} labels={labels ?? { labels: [] }} />
          </section>
        </>
      )}
      <ConfirmDialog confirmation={confirmation} onClose={() => setConfirmation(undefined)} />
    </section>
  );
}
