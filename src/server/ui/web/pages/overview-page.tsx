import { formatCount, formatDuration, formatRate } from '../format.js';
import { RATE_COUNTERS, type RateCounter } from '../history.js';
import { ErrorNotice, Loading } from '../parts/notice.js';
import { Sparkline } from '../parts/sparkline.js';
import { href } from '../router.js';
import { can, useSession, useTopic } from '../session.js';

const RATE_HEADERS: Partial<Record<RateCounter, string>> = {
  published: 'Published/s',
  acks: 'Acked/s',
  redeliveries: 'Redelivered/s',
  // Leases that ran out (R3b); jobs that died of retention are `expired`, counted apart (R30).
  expiries: 'Lease expiries/s',
  staleAcks: 'Stale acks/s',
};
const SHOWN_RATES = RATE_COUNTERS.filter((name) => RATE_HEADERS[name] !== undefined);

/** Every queue the key can see, one row each. */
export function OverviewPage() {
  const { history, me } = useSession();
  const stats = useTopic({ kind: 'stats' });
  if (stats?.data === undefined) {
    return stats?.error ? (
      <ErrorNotice error={stats.error} what="the queues" />
    ) : (
      <Loading what="queues" />
    );
  }
  const queues = stats.data.queues;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Queues</h1>
      <ErrorNotice error={stats.error} what="the latest figures" />
      {queues.length === 0 ? (
        <p class="empty">
          No queues this key can see. Create one with PUT /v1/queues/&lt;name&gt;.
        </p>
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
                const samples = history.of(name);
                const latest = samples.at(-1);
                const dead = formatCount(figures.dead);
                return (
                  <tr key={name}>
                    <th scope="row">
                      <a href={href.queue(name)}>{name}</a>
                      {figures.paused ? <span class="badge"> paused</span> : null}
                    </th>
                    <td class="num">{formatCount(figures.ready)}</td>
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
                        {formatRate(latest?.rates[rate])}
                      </td>
                    ))}
                    <td>
                      <Sparkline
                        values={samples.map((sample) => sample.stats.ready + sample.stats.delayed)}
                        label={`Depth of ${name} over the last ${samples.length} readings`}
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
