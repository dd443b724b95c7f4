import { useEffect, useState } from 'preact/hooks';
import { type Topic, topicKey } from '../feed.js';
import { formatCount, formatDuration, formatRate } from '../format.js';
import { RATE_COUNTERS, type RateCounter } from '../history.js';
import { ErrorNotice, Loading } from '../parts/notice.js';
import { PageTitle } from '../parts/page-title.js';
import { Sparkline } from '../parts/sparkline.js';
import { href, MAX_FILTER_LENGTH, replaceRoute } from '../router.js';
import { can, useSession } from '../session.js';
import type { AllStats, StatsQuery } from '../wire.js';

const RATE_HEADERS: Partial<Record<RateCounter, string>> = {
  published: 'Published/s',
  acks: 'Acked/s',
  redeliveries: 'Redelivered/s',
  // Leases that ran out (R3b); jobs that died of retention are `expired`, counted apart (R30).
  expiries: 'Lease expiries/s',
  staleAcks: 'Stale acks/s',
};
const SHOWN_RATES = RATE_COUNTERS.filter((name) => RATE_HEADERS[name] !== undefined);

/** How many queues the overview lists at once: drawing 5,000 rows every 2 s stalls the page. */
export const QUEUES_PER_PAGE = 50;

/** A page of the overview as the server answered it, with the page asked for. */
interface ShownPage {
  page: StatsQuery;
  data: AllStats;
}

/**
 * The latest answer for `page` (GET /v1/stats?contains=&offset=&limit=), live. Until the page
 * asked for is first answered, the page answered before stays, so that typing in the filter or
 * turning a page never blanks the table.
 */
function useStatsPage(page: StatsQuery): { shown?: ShownPage; error?: Error } {
  const { feed } = useSession();
  const topic: Topic<'stats'> = { kind: 'stats', page };
  const key = topicKey(topic);
  const [shown, setShown] = useState<ShownPage>();
  const [error, setError] = useState<Error>();
  useEffect(
    () =>
      feed.subscribe(topic, (update) => {
        setError(update.error);
        if (update.data !== undefined) setShown({ page, data: update.data });
      }),
    [feed, key],
  );
  return { ...(shown === undefined ? {} : { shown }), ...(error === undefined ? {} : { error }) };
}

/**
 * Every queue the key can see, one row each, a page of QUEUES_PER_PAGE at a time: the page `at`
 * (from 0) of those whose name contains `filter`. Both are in the address (`href.overview`), so
 * that Back from a queue opened here, a reload or a link shows them again.
 */
export function OverviewPage(props: { filter: string; at: number }) {
  const { filter, at: pageAsked } = props;
  const { history, me } = useSession();
  // In place of the address's own: a new entry for each key typed would make Back retype them.
  const setPage = (at: number) => replaceRoute(href.overview({ filter, at }));
  const setFilter = (typed: string) => replaceRoute(href.overview({ filter: typed, at: 0 }));
  const needle = filter.trim();
  // The server filters and cuts the page: only the rows shown are read, every 2 s.
  const { shown, error } = useStatsPage({
    contains: needle,
    offset: pageAsked * QUEUES_PER_PAGE,
    limit: QUEUES_PER_PAGE,
  });
  const total = shown?.data.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / QUEUES_PER_PAGE));
  // Queues go while a later page is open: it goes back within what there is.
  const pastTheEnd = shown !== undefined && shown.page.offset > 0 && shown.page.offset >= total;
  useEffect(() => {
    if (pastTheEnd) setPage(pages - 1);
  }, [pastTheEnd, pages]);
  if (shown === undefined) {
    return error ? <ErrorNotice error={error} what="the queues" /> : <Loading what="queues" />;
  }
  const queues = shown.data.queues;
  const first = shown.page.offset;
  const page = Math.min(pageAsked, pages - 1);
  // A small install sees its queues as ever: the filter and pages come with more than a page.
  const paged = total > QUEUES_PER_PAGE || needle !== '' || shown.page.contains !== '';
  return (
    <section aria-labelledby="overview-title">
      <PageTitle id="overview-title">Queues</PageTitle>
      <ErrorNotice error={error} what="the latest figures" />
      {paged ? (
        <div class="toolbar">
          <label>
            Filter by name{' '}
            <input
              type="search"
              value={filter}
              placeholder="part of a queue's name"
              spellcheck={false}
              maxLength={MAX_FILTER_LENGTH}
              onInput={(event) => setFilter(event.currentTarget.value)}
            />
          </label>
          <Pager
            first={first}
            shown={queues.length}
            total={total}
            page={page}
            pages={pages}
            onPage={setPage}
          />
        </div>
      ) : null}
      {total === 0 && shown.page.contains === '' ? (
        <p class="empty">
          No queues this key can see. Create one with PUT /v1/queues/&lt;name&gt;.
        </p>
      ) : total === 0 ? (
        <p class="empty">No queue's name contains “{shown.page.contains}”.</p>
      ) : queues.length === 0 ? (
        <Loading what="queues" />
      ) : (
        <div class="table-scroll">
          <table class="figures">
            <caption class="visually-hidden">Queues and their figures; rates per second</caption>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col" class="num">
                  Ready
                </th>
                <th
                  scope="col"
                  class="num"
                  title="Grouped jobs behind an earlier job of their group, ready once it is done"
                >
                  Waiting
                </th>
                <th scope="col" class="num">
                  Delayed
                </th>
                <th scope="col" class="num">
                  In flight
                </th>
                <th scope="col" class="num">
                  Dead
                </th>
                <th scope="col" class="num">
                  Oldest ready
                </th>
                {SHOWN_RATES.map((name) => (
                  <th scope="col" class="num rate" key={name}>
                    {RATE_HEADERS[name]}
                  </th>
                ))}
                <th scope="col">Depth</th>
              </tr>
            </thead>
            <tbody>
              {queues.map(({ name, stats: figures }) => {
                const depths = history.depths(name);
                const rates = history.rates(name);
                const dead = formatCount(figures.dead);
                return (
                  <tr key={name}>
                    <th scope="row">
                      {/* Up to 80 characters: cut, the whole in its title, so that the
                          figures of every row stay in view. */}
                      <a href={href.queue(name)} class="queue-name" title={name}>
                        {name}
                      </a>
                      {figures.paused ? <span class="badge"> paused</span> : null}
                      {(rates?.refused ?? 0) > 0 ? (
                        <span
                          class="badge refusing"
                          title={`${formatRate(rates?.refused)} jobs/s of publishes refused (QUEUE_FULL) at the latest reading: the queue is at its max length`}
                        >
                          {' '}
                          refusing publishes
                        </span>
                      ) : null}
                    </th>
                    <td class="num">{formatCount(figures.ready)}</td>
                    <td class="num">{formatCount(figures.waiting)}</td>
                    <td class="num">{formatCount(figures.delayed)}</td>
                    <td class="num">{formatCount(figures.active)}</td>
                    <td class={figures.dead > 0 ? 'num dead-alert' : 'num'}>
                      {figures.dead > 0 && can(me, 'admin', name) ? (
                        <a
                          href={href.deadLetters(name)}
                          aria-label={`${dead} dead letters of ${name}`}
                        >
                          {dead}
                        </a>
                      ) : (
                        dead
                      )}
                    </td>
                    <td class="num">
                      {figures.ready > 0 ? formatDuration(figures.oldestReadyAge) : '–'}
                    </td>
                    {SHOWN_RATES.map((rate) => (
                      <td class="num rate" key={rate}>
                        {formatRate(rates?.[rate])}
                      </td>
                    ))}
                    <td>
                      <Sparkline
                        values={depths}
                        label={`Depth of ${name} over the last ${depths.length} readings`}
                      />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** "51–100 of 5,000 queues" ("1 of 1 queue"), and the buttons to the pages before and after. */
function Pager(props: {
  first: number;
  shown: number;
  total: number;
  page: number;
  pages: number;
  onPage(page: number): void;
}) {
  const { first, shown, total, page, pages, onPage } = props;
  const range =
    shown === 0
      ? '0'
      : shown === 1
        ? formatCount(first + 1)
        : `${formatCount(first + 1)}–${formatCount(first + shown)}`;
  return (
    <nav class="pager" aria-label="Pages of queues">
      <span role="status">
        {`${range} of ${formatCount(total)} ${total === 1 ? 'queue' : 'queues'}`}
      </span>
      {/* At the first or last page the button takes nothing, yet keeps the focus: pressed to
          reach that page, a `disabled` would lose it to the body, and the next Tab would start
          the page over. */}
      <button
        type="button"
        aria-disabled={page === 0}
        onClick={() => {
          if (page > 0) onPage(page - 1);
        }}
      >
        Previous page
      </button>
      <button
        type="button"
        aria-disabled={page >= pages - 1}
        onClick={() => {
          if (page < pages - 1) onPage(page + 1);
        }}
      >
        Next page
      </button>
    </nav>
  );
}
