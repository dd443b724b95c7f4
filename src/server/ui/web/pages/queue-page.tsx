import { useEffect, useState } from 'preact/hooks';
import { ApiError, WAITING_SHOWN } from '../api.js';
import type { Update } from '../feed.js';
import {
  formatBound,
  formatCount,
  formatDuration,
  formatRate,
  formatRelative,
  formatTime,
  isoTime,
} from '../format.js';
import { RATE_COUNTERS, type RateCounter, type Series } from '../history.js';
import { useGoWithMessage } from '../page-message.js';
import { ActionStatus, useActions } from '../parts/action-status.js';
import { Chart, type ChartSeries } from '../parts/chart.js';
import { type Confirmation, ConfirmDialog, type Withdrawn } from '../parts/confirm-dialog.js';
import { JobLink } from '../parts/job-link.js';
import { ErrorNotice, Loading } from '../parts/notice.js';
import { PageTitle } from '../parts/page-title.js';
import { href } from '../router.js';
import { can, useServerNow, useSession, useTopic } from '../session.js';
import type { LiveDelivery, QueueStats, WireQueueOptions } from '../wire.js';
import { QueueTabs } from './queue-tabs.js';

/**
 * Where the queue stands against its max length (R31), when it has one: `full` when a publish
 * of one more ready job is refused (overflow `reject`), `dropping` when it makes the oldest
 * ready job die (`dead-letter-oldest`).
 */
function lengthState(
  stats: QueueStats,
  options: WireQueueOptions | undefined,
): 'full' | 'dropping' | undefined {
  const max = options?.maxLength;
  if (max === undefined || stats.ready < max) return undefined;
  return options?.overflow === 'dead-letter-oldest' ? 'dropping' : 'full';
}

/** What the card of jobs refused (R31) says in its title. */
const REFUSED_TITLE =
  'Jobs of publishes refused with QUEUE_FULL: they would have taken the queue past its max length';

function Figures(props: {
  stats: QueueStats;
  /** Publishes beyond the queue's max length are refused: how many were is worth a card. */
  bounded: boolean;
  /** Refusing publishes: some refused since the previous reading, or full and refused before. */
  refusing: boolean;
}) {
  const { stats, bounded, refusing } = props;
  const items: [string, string, boolean][] = [
    ['Ready', formatCount(stats.ready), false],
    // Grouped jobs behind an earlier job of their group (R24): queued, but not ready yet.
    ['Waiting', formatCount(stats.waiting), false],
    ['Delayed', formatCount(stats.delayed), false],
    ['In flight', formatCount(stats.active), false],
    ['Dead', formatCount(stats.dead), stats.dead > 0],
    ['Oldest ready', stats.ready > 0 ? formatDuration(stats.oldestReadyAge) : '–', false],
    ['Sessions', formatCount(stats.sessions), false],
    ['State', stats.paused ? 'Paused' : 'Running', false],
  ];
  // R31: only a queue with a max length and overflow `reject` refuses publishes (or did, before
  // its options changed).
  if (bounded || stats.refused > 0) {
    items.splice(5, 0, ['Refused', formatCount(stats.refused), refusing]);
  }
  return (
    <dl class="cards">
      {items.map(([label, value, alert]) => (
        <div
          class={alert ? 'card dead-alert' : 'card'}
          key={label}
          title={label === 'Refused' ? REFUSED_TITLE : undefined}
        >
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** What the length notice says, and how. */
interface LengthSaying {
  /** The notice's colour: red for refused publishes, amber for jobs that die to make room. */
  tone: 'full' | 'paused';
  /** The state of the queue, read out when it changes. */
  text: string;
  /** The rate refused at the latest reading, shown after it but never read out by itself. */
  rate: string;
}

/**
 * What to say when the queue is at its max length (R31), as the paused notice says it is paused:
 * full and refusing publishes, or making room by killing its oldest ready jobs; and when it
 * refused publishes since the previous reading though it is not full (a batch larger than the
 * room). Ready may be above the bound (a bound lowered, requeues, redrives, R31): said so.
 */
function lengthSaying(
  queue: string,
  stats: QueueStats | undefined,
  options: WireQueueOptions | undefined,
  refusedRate: number | null,
): LengthSaying | undefined {
  const max = options?.maxLength;
  if (stats === undefined || max === undefined) return undefined;
  const state = lengthState(stats, options);
  const limit = `its max length of ${formatCount(max)} ready ${max === 1 ? 'job' : 'jobs'}`;
  const over = stats.ready > max;
  const rate =
    refusedRate !== null && refusedRate > 0
      ? ` Refused at the latest reading: ${formatRate(refusedRate)} jobs/s.`
      : '';
  if (state === 'full') {
    const holds = over ? `${formatCount(stats.ready)} ready jobs, more than ${limit}` : limit;
    const paused = stats.paused ? ', which they cannot while it is paused' : '';
    return {
      tone: 'full',
      text: `Full: ${queue} holds ${holds}: publishes that add a ready job are refused (QUEUE_FULL) until consumers take jobs${paused}.`,
      rate,
    };
  }
  if (state === 'dropping') {
    return {
      tone: 'paused',
      text: over
        ? `Past ${limit} (${formatCount(stats.ready)} ready): the next job published to ${queue} makes its oldest ready jobs die until ${formatCount(max)} ${max === 1 ? 'is' : 'are'} left (reason maxlen).`
        : `At ${limit}: each job published to ${queue} makes its oldest ready job die (reason maxlen).`,
      rate: '',
    };
  }
  if (rate === '' || options?.overflow === 'dead-letter-oldest') return undefined;
  return {
    tone: 'full',
    text: `Refusing publishes: ${queue} refused publishes that would have taken it past ${limit} (QUEUE_FULL).`,
    rate,
  };
}

/**
 * The length notice. Its status is one element, there whether or not it has anything to say: a
 * screen reader reads a status whose text changes, not one drawn with its text already in it
 * (the queue becoming full while the page is open). The rate, new at every reading, is beside
 * the status, not in it: in it, the whole notice would be read out again every 2 s.
 */
function LengthNotice(props: {
  queue: string;
  stats: QueueStats | undefined;
  options: WireQueueOptions | undefined;
  refusedRate: number | null;
}) {
  const said = lengthSaying(props.queue, props.stats, props.options, props.refusedRate);
  return (
    <p class={said === undefined ? 'length-notice' : `length-notice notice ${said.tone}`}>
      <span role="status">{said?.text ?? ''}</span>
      {said?.rate ?? ''}
    </p>
  );
}

function Options(props: { queue: string }) {
  const info = useTopic({ kind: 'queue', queue: props.queue });
  const options = info?.data?.options;
  if (options === undefined) return <ErrorNotice error={info?.error} what="the options" />;
  const rows: [string, string][] = [
    ['Visibility', formatBound(options.visibility, 'ms')],
    ['Prefetch', formatBound(options.prefetch, 'count')],
    ['Max deliveries', formatBound(options.maxDeliveries, 'count')],
    ['Max lease', formatBound(options.maxLease, 'ms')],
    ['Dedup window', options.dedupWindow === 0 ? 'none' : formatDuration(options.dedupWindow)],
    ['Dead-letter queue', options.deadLetterQueue ?? 'none'],
    ['Retention', options.retention === undefined ? 'none' : formatDuration(options.retention)],
    [
      'Max length',
      options.maxLength === undefined
        ? 'none'
        : `${options.maxLength} ready (${options.overflow === 'dead-letter-oldest' ? 'oldest dies' : 'publish refused'})`,
    ],
  ];
  return (
    <section class="panel" aria-labelledby="options-title">
      <h2 id="options-title">Options</h2>
      <dl class="options">
        {rows.map(([label, value]) => (
          <div key={label}>
            <dt>{label}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function Charts(props: { series: Series }) {
  const { series } = props;
  const times = series.times;
  const gauge = (label: string, color: string, values: number[]): ChartSeries => ({
    label,
    color,
    values,
  });
  const rate = (label: string, color: string, name: RateCounter): ChartSeries => ({
    label,
    color,
    values: series.rates[name],
  });
  return (
    <section class="charts-section" aria-labelledby="charts-title">
      <h2 id="charts-title">Since this page opened</h2>
      {times.length < 2 ? (
        <p class="empty">The charts fill in as readings arrive (one every 2 s).</p>
      ) : (
        <div class="charts">
          <Chart
            title="Depth"
            times={times}
            series={[
              gauge('Ready', '--series-1', series.gauges.ready),
              gauge('Waiting', '--series-5', series.gauges.waiting),
              gauge('Delayed', '--series-2', series.gauges.delayed),
              gauge('Dead', '--series-4', series.gauges.dead),
            ]}
          />
          <Chart
            title="In flight"
            times={times}
            series={[gauge('In flight', '--series-3', series.gauges.active)]}
          />
          <Chart
            title="Deliveries and acks per second"
            times={times}
            unit="/s"
            series={[
              rate('Deliveries', '--series-1', 'deliveries'),
              rate('Acks', '--series-3', 'acks'),
              // R33: taken and given back unworked, a prefetch above what consumers use.
              rate('Given back unworked', '--series-2', 'unworked'),
            ]}
          />
          <Chart
            title="Lease events per second"
            times={times}
            unit="/s"
            series={[
              rate('Redeliveries', '--series-2', 'redeliveries'),
              rate('Lease expiries', '--series-4', 'expiries'),
              rate('Extensions', '--series-5', 'extensions'),
              rate('Stale acks', '--series-6', 'staleAcks'),
            ]}
          />
        </div>
      )}
    </section>
  );
}

/**
 * The oldest deliveries in flight, one page of the API's (DELIVERIES_SHOWN); how many there
 * are in all comes from the stats, which the page reads anyway.
 */
function InFlight(props: { queue: string; stats: QueueStats | undefined }) {
  const { queue, stats } = props;
  const now = useServerNow();
  const live = useTopic({ kind: 'deliveries', queue });
  const deliveries: LiveDelivery[] | undefined = live?.data?.deliveries;
  // More in flight than one page holds: the list is the oldest.
  const more = live?.data?.next !== undefined;
  // Read apart from the page, the count may lag it: never fewer than the page shows.
  const total =
    stats === undefined ? undefined : Math.max(stats.active, (deliveries?.length ?? 0) + 1);
  return (
    <section class="panel" aria-labelledby="in-flight-title">
      <h2 id="in-flight-title">In flight</h2>
      <ErrorNotice error={live?.error} what="the deliveries" />
      {deliveries !== undefined && more ? (
        <p class="notice">
          Listed: the {formatCount(deliveries.length)} oldest
          {total === undefined ? ' (more are in flight)' : ` of ${formatCount(total)} in flight`}.
        </p>
      ) : null}
      {deliveries === undefined ? (
        live?.error ? null : (
          <Loading what="deliveries" />
        )
      ) : deliveries.length === 0 ? (
        <p class="empty">No delivery is in flight.</p>
      ) : (
        <div class="table-scroll">
          <table>
            <caption class="visually-hidden">Live deliveries of {queue}, by token</caption>
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col" class="num">
                  Token
                </th>
                <th scope="col" class="num">
                  Delivery count
                </th>
                <th scope="col">Delivered</th>
                <th scope="col">Deadline</th>
                <th scope="col">Session</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((delivery) => (
                <tr key={delivery.token}>
                  <th scope="row">
                    <JobLink queue={queue} id={delivery.id} />
                  </th>
                  <td class="num mono">{delivery.token}</td>
                  <td class="num">{delivery.deliveryCount}</td>
                  <td>
                    <time
                      dateTime={isoTime(delivery.deliveredAt)}
                      title={formatTime(delivery.deliveredAt)}
                    >
                      {formatRelative(delivery.deliveredAt, now)}
                    </time>
                  </td>
                  <td class={delivery.deadline - now < 5000 ? 'soon' : undefined}>
                    <time
                      dateTime={isoTime(delivery.deadline)}
                      title={formatTime(delivery.deadline)}
                    >
                      {delivery.deadline <= now ? 'due' : formatRelative(delivery.deadline, now)}
                    </time>
                  </td>
                  <td class="mono ellipsis" title={delivery.session}>
                    {delivery.session ?? '–'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** A list of the first ids of one kind, with how many more there are. */
function IdList(props: {
  id: string;
  title: string;
  queue: string;
  jobs: { id: string; note?: string }[];
  total: number | undefined;
}) {
  const { id, title, queue, jobs, total } = props;
  return (
    <section class="panel" aria-labelledby={id}>
      <h2 id={id}>
        {title} (first {WAITING_SHOWN})
      </h2>
      {jobs.length === 0 ? (
        <p class="empty">None.</p>
      ) : (
        <ol class="id-list">
          {jobs.map((job) => (
            <li key={job.id}>
              <JobLink queue={queue} id={job.id} />
              {job.note === undefined ? null : (
                <>
                  {' '}
                  <span class="muted">{job.note}</span>
                </>
              )}
            </li>
          ))}
        </ol>
      )}
      {/* Read apart from the list, the total may lag it: "more" only past a full list. */}
      {jobs.length === WAITING_SHOWN && total !== undefined && total > jobs.length ? (
        <p class="muted">and {formatCount(total - jobs.length)} more</p>
      ) : null}
    </section>
  );
}

/**
 * The first ready, delayed and waiting jobs (grouped, behind an earlier job of their group);
 * how many more there are comes from the stats.
 */
function Waiting(props: { queue: string; stats: QueueStats | undefined }) {
  const { queue, stats } = props;
  const view = useTopic({ kind: 'inspect', queue });
  const state = view?.data;
  if (state === undefined) return <ErrorNotice error={view?.error} what="the waiting jobs" />;
  const waiting = state.waiting ?? [];
  return (
    <>
      <div class="two-columns">
        <IdList
          id="ready-title"
          title="Ready"
          queue={queue}
          jobs={state.ready.map((id) => ({ id }))}
          total={stats?.ready}
        />
        <IdList
          id="delayed-title"
          title="Delayed"
          queue={queue}
          jobs={state.delayed.map((job) => ({
            id: job.id,
            note: `ready ${formatRelative(job.availableAt, state.queueTime)}`,
          }))}
          total={stats?.delayed}
        />
      </div>
      {waiting.length > 0 || (stats?.waiting ?? 0) > 0 ? (
        <IdList
          id="waiting-title"
          title="Waiting in groups"
          queue={queue}
          jobs={waiting.map((id) => ({ id }))}
          total={stats?.waiting}
        />
      ) : null}
    </>
  );
}

const jobs = (count: number) => `${formatCount(count)} ${count === 1 ? 'job' : 'jobs'}`;

/** What deleting the queue removes, as its latest figures count it. */
function whatIsLost(queue: string, stats: QueueStats): string {
  const parts: [number, string][] = [
    [stats.ready, 'ready'],
    [stats.waiting, 'waiting in groups'],
    [stats.delayed, 'delayed'],
    [stats.active, 'in flight'],
    [stats.dead, 'dead'],
  ];
  const held = parts.filter(([count]) => count > 0);
  const total = held.reduce((sum, [count]) => sum + count, 0);
  const jobsLost =
    total === 0
      ? `${queue} holds no job at the latest reading; any published before you confirm goes with it.`
      : `Its ${jobs(total)} at the latest reading (${held
          .map(([count, what]) => `${formatCount(count)} ${what}`)
          .join(', ')}) ${total === 1 ? 'is' : 'are'} removed for good with ${
          total === 1 ? 'its' : 'their'
        } history, and so is any job published before you confirm.`;
  const inFlight =
    stats.active > 0 ? ' The consumers of the jobs in flight can no longer ack them.' : '';
  return `${jobsLost}${inFlight} Its options, schedules, sessions and figures go too. This cannot be undone.`;
}

/**
 * The queue's name, sections and state (paused or not) for every key; for admins, Pause or
 * Resume and Delete beside the name. The server checks the key again (403) whatever is shown.
 */
function QueueHead(props: {
  queue: string;
  stats: QueueStats | undefined;
  read: Update<QueueStats> | undefined;
  /** Asks first in the page's dialog, which outlives this head when the queue goes. */
  ask(confirmation: Confirmation): void;
}) {
  const { queue, stats, read, ask: setConfirmation } = props;
  const { api, feed, me } = useSession();
  const goWithMessage = useGoWithMessage();
  const actions = useActions(read);
  const busy = actions.busy !== undefined;
  const admin = can(me, 'admin', queue);
  // While an action is on its way the buttons take nothing, yet keep the focus: a disabled
  // button loses it to the body, and Pause, which turns into Resume, would leave the keyboard
  // nowhere (as would Delete, where the dialog gives the focus back).
  const unlessBusy = (act: () => void) => () => {
    if (!busy) act();
  };
  const pause = async (paused: boolean) => {
    await actions.run(
      `${paused ? 'Pausing' : 'Resuming'} ${queue}…`,
      async () => ((await api.setPaused(queue, paused)) ? `Paused ${queue}.` : `Resumed ${queue}.`),
      (why) => `${paused ? 'Pause' : 'Resume'} failed: ${why}`,
    );
    feed.refresh();
  };
  const remove = async () => {
    let deleted = false;
    const done = await actions.run(
      `Deleting ${queue}…`,
      async () => {
        deleted = await api.deleteQueue(queue);
        return deleted ? `Deleted ${queue}.` : `No queue ${queue} to delete.`;
      },
      (why) => `Delete failed: ${why}`,
    );
    // Its page has nothing left to show: the overview says what became of it, unless another
    // page was opened meanwhile, which then says it.
    if (done) {
      goWithMessage(
        href.overview(),
        deleted
          ? `Deleted queue ${queue} and every job in it.`
          : `Queue ${queue} was already gone: it was deleted before this request reached the server.`,
        href.queue(queue),
      );
    }
  };
  return (
    <>
      <div class="page-head">
        <PageTitle id="queue-title">
          <span class="muted">Queue</span> {queue}
        </PageTitle>
        {admin && stats !== undefined ? (
          <div class="toolbar-actions">
            {stats.paused ? (
              <button
                type="button"
                class="primary"
                aria-disabled={busy}
                onClick={unlessBusy(() => void pause(false))}
              >
                Resume queue
              </button>
            ) : (
              <button
                type="button"
                aria-disabled={busy}
                title="Hand out no job until resumed; publishes, acks and lease expiries go on"
                onClick={unlessBusy(() => void pause(true))}
              >
                Pause queue
              </button>
            )}
            <button
              type="button"
              class="danger-quiet"
              aria-disabled={busy}
              onClick={unlessBusy(() =>
                setConfirmation({
                  title: `Delete queue ${queue}?`,
                  body: whatIsLost(queue, stats),
                  verb: 'Delete queue',
                  danger: true,
                  retype: queue,
                  onConfirm: () => void remove(),
                }),
              )}
            >
              Delete queue
            </button>
          </div>
        ) : null}
      </div>
      <QueueTabs queue={queue} current="queue" dead={stats?.dead} />
      {stats?.paused ? (
        <p class="notice paused" role="status">
          Paused: {queue} hands out no job (receives answer empty) until it is resumed; publishes,
          acks and lease expiries go on.
        </p>
      ) : null}
      <ActionStatus state={actions} />
    </>
  );
}

/**
 * Why the delete dialog has nothing left to ask: the queue deleted (404), refused this key
 * (403), or deleted and made again between two readings.
 */
type Gone = 404 | 403 | 'remade';

/** One queue: its figures, options, charts, and (for admins) what is in flight and waiting. */
export function QueuePage(props: { queue: string }) {
  const { queue } = props;
  const { history, me } = useSession();
  const goWithMessage = useGoWithMessage();
  // This queue's figures alone: a page about one queue never reads every queue's.
  const read = useTopic({ kind: 'queueStats', queue });
  // The options say whether the queue is bounded (R31); the Options panel reads them too.
  const options = useTopic({ kind: 'queue', queue })?.data?.options;
  const stats = read?.data;
  const admin = can(me, 'admin', queue);
  const [confirmation, setConfirmation] = useState<Confirmation>();
  // The figures the dialog counted when it was opened.
  const [askedOf, setAskedOf] = useState<QueueStats>();
  const ask = (next: Confirmation) => {
    setAskedOf(stats);
    setConfirmation(next);
  };
  const missing =
    read?.error instanceof ApiError && (read.error.status === 404 || read.error.status === 403)
      ? (read.error.status as 404 | 403)
      : undefined;
  // A queue deleted and made again elsewhere between two readings is never read as missing: its
  // counters, begun again, went back. The dialog counted the one deleted, not this one.
  const remade =
    confirmation !== undefined &&
    askedOf !== undefined &&
    stats !== undefined &&
    RATE_COUNTERS.some((counter) => stats[counter] < askedOf[counter]);
  // The queue went while the dialog asked about it (deleted elsewhere): the dialog says so, and
  // keeps saying it should the queue be made again meanwhile, until the operator closes it.
  const [goneWhileAsked, setGoneWhileAsked] = useState<Gone>();
  const gone: Gone | undefined =
    confirmation === undefined
      ? undefined
      : (goneWhileAsked ?? missing ?? (remade ? 'remade' : undefined));
  useEffect(() => {
    if (gone !== undefined && goneWhileAsked === undefined) setGoneWhileAsked(gone);
  }, [gone, goneWhileAsked]);
  const withdrawn: Withdrawn | undefined =
    gone === undefined
      ? undefined
      : {
          ...(gone === 404
            ? {
                title: `Queue ${queue} is gone`,
                body: 'It was deleted elsewhere (by another operator, or with leaseq queue delete) while this dialog was open: there is nothing left to delete.',
              }
            : gone === 'remade'
              ? {
                  title: `Queue ${queue} was deleted and made again`,
                  body: 'It was deleted elsewhere (by another operator, or with leaseq queue delete) while this dialog was open, and a new queue of that name was made since: what this dialog counted is gone, and it deletes nothing. Stay to see the new queue.',
                }
              : {
                  title: `This key may no longer see queue ${queue}`,
                  body: 'The server refused this key the queue (403) while this dialog was open: this page can delete nothing.',
                }),
          leave: 'Go to the overview',
          onLeave: () =>
            goWithMessage(
              href.overview(),
              gone !== 403
                ? `Queue ${queue} was deleted elsewhere before its delete here was confirmed.`
                : `This key may no longer see queue ${queue}.`,
            ),
        };
  // Closed once its queue went, the dialog gives the focus back to nothing: the Delete button it
  // came from is gone with the queue (or drawn anew for the queue made again), and the focus
  // would fall to the body. The page's line about the queue takes it: its heading, or the notice
  // that there is no such queue.
  const [refocus, setRefocus] = useState(false);
  useEffect(() => {
    if (!refocus) return;
    setRefocus(false);
    const focused = document.activeElement;
    if (focused !== null && focused !== document.body) return;
    document.getElementById(missing === undefined ? 'queue-title' : 'queue-missing')?.focus();
  }, [refocus, missing]);
  const dialog = (
    <ConfirmDialog
      confirmation={confirmation}
      withdrawn={withdrawn}
      onClose={() => {
        setConfirmation(undefined);
        setAskedOf(undefined);
        setGoneWhileAsked(undefined);
        if (gone !== undefined) setRefocus(true);
      }}
    />
  );
  if (missing !== undefined) {
    return (
      <>
        <section aria-labelledby="queue-missing-title">
          <PageTitle id="queue-missing-title">No such queue</PageTitle>
          <p class="notice" id="queue-missing" tabIndex={-1}>
            No queue named {queue} that this key can see.
          </p>
        </section>
        {dialog}
      </>
    );
  }
  const refusedRate = history.rates(queue)?.refused ?? null;
  const state = stats === undefined ? undefined : lengthState(stats, options);
  return (
    <>
      <section aria-labelledby="queue-title">
        <QueueHead queue={queue} stats={stats} read={read} ask={ask} />
        <LengthNotice queue={queue} stats={stats} options={options} refusedRate={refusedRate} />
        <QueueBody
          queue={queue}
          read={read}
          admin={admin}
          bounded={options?.maxLength !== undefined && options.overflow !== 'dead-letter-oldest'}
          refusing={
            (refusedRate !== null && refusedRate > 0) ||
            (state === 'full' && (stats?.refused ?? 0) > 0)
          }
        />
      </section>
      {dialog}
    </>
  );
}

/** The page below its head: figures, charts, options, and what is in flight and waiting. */
function QueueBody(props: {
  queue: string;
  read: Update<QueueStats> | undefined;
  admin: boolean;
  bounded: boolean;
  refusing: boolean;
}) {
  const { queue, read, admin, bounded, refusing } = props;
  const { history } = useSession();
  const stats = read?.data;
  return (
    <>
      {stats === undefined ? (
        read?.error ? (
          <ErrorNotice error={read.error} what="the figures" />
        ) : (
          <Loading what="figures" />
        )
      ) : (
        <>
          {read?.error ? <ErrorNotice error={read.error} what="the latest figures" /> : null}
          <Figures stats={stats} bounded={bounded} refusing={refusing} />
        </>
      )}
      <div class="two-columns wide-left">
        <Charts series={history.series(queue)} />
        <Options queue={queue} />
      </div>
      {admin ? (
        <>
          <InFlight queue={queue} stats={stats} />
          <Waiting queue={queue} stats={stats} />
        </>
      ) : (
        <p class="notice">
          In-flight deliveries and waiting jobs are shown to keys with the admin right.
        </p>
      )}
    </>
  );
}
