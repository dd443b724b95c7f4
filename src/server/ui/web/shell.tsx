import { useEffect, useRef } from 'preact/hooks';
import { formatTime, visible, visibleId } from './format.js';
import { PageMessage, PageMessageContext, usePageMessage } from './page-message.js';
import { DeadLettersPage } from './pages/dead-letters-page.js';
import { JobPage } from './pages/job-page.js';
import { OverviewPage } from './pages/overview-page.js';
import { QueuePage } from './pages/queue-page.js';
import { type Arrival, ArrivalContext, PageTitle } from './parts/page-title.js';
import { href, pageKey, type Route, useRoute } from './router.js';
import { type Session, SessionContext, useFeedState, useSession } from './session.js';

function LiveControl() {
  const { feed } = useSession();
  const state = useFeedState();
  const last = state.lastUpdate > 0 ? formatTime(state.lastUpdate) : undefined;
  // While reads fail, the header says so and when the figures were last read: never "Live".
  const text = state.paused
    ? `Paused${last === undefined ? '' : ` · ${last}`}`
    : state.failing !== undefined
      ? `Not updating${last === undefined ? '' : ` · last read ${last}`}`
      : `Live${last === undefined ? '' : ` · ${last}`}`;
  const dot = state.paused ? 'paused' : state.failing !== undefined ? 'failing' : '';
  return (
    <div class="live">
      <span class={`live-dot ${dot}`.trim()} aria-hidden="true" />
      <span
        class="live-text"
        aria-live="off"
        title={state.failing === undefined ? undefined : `The latest read failed: ${state.failing}`}
      >
        {text}
      </span>
      <button
        type="button"
        aria-pressed={state.paused}
        onClick={() => feed.setPaused(!state.paused)}
      >
        {state.paused ? 'Resume live updates' : 'Pause live updates'}
      </button>
    </div>
  );
}

function Page(props: { route: Route }) {
  const { route } = props;
  switch (route.page) {
    case 'overview':
      return <OverviewPage filter={route.filter} at={route.at} />;
    case 'queue':
      return <QueuePage queue={route.queue} key={route.queue} />;
    case 'deadLetters':
      return <DeadLettersPage queue={route.queue} reason={route.reason} key={route.queue} />;
    case 'job':
      return <JobPage queue={route.queue} id={route.id} key={`${route.queue}/${route.id}`} />;
    case 'notFound':
      return (
        <section aria-labelledby="missing-title">
          <PageTitle id="missing-title">No such page</PageTitle>
          <p class="notice">
            The dashboard has no page at this address.{' '}
            <a href={href.overview()}>Back to the queues</a>.
          </p>
        </section>
      );
  }
}

/** The name of the page (index.html's alone, at sign-in). */
const APP_TITLE = 'leaseq dashboard';

/**
 * The document's title for `route`: each page its own, so that a tab, the history and a screen
 * reader name the page shown rather than the dashboard alone.
 */
function pageTitle(route: Route): string {
  switch (route.page) {
    case 'overview':
      return `Queues · ${APP_TITLE}`;
    case 'queue':
      return `Queue ${visible(route.queue)} · ${APP_TITLE}`;
    case 'deadLetters':
      return `Dead letters of ${visible(route.queue)} · ${APP_TITLE}`;
    case 'job':
      return `Job ${visibleId(route.id)} in ${visible(route.queue)} · ${APP_TITLE}`;
    case 'notFound':
      return `No such page · ${APP_TITLE}`;
  }
}

/** The frame around every page: brand, live control, who is signed in. */
export function Shell(props: { session: Session }) {
  const { session } = props;
  const route = useRoute();
  const { message, go } = usePageMessage(route);
  const page = pageKey(route);
  useEffect(() => {
    document.title = pageTitle(route);
  }, [page]);
  // Another page opened (a link followed, Back or Forward; not the first one shown): its heading
  // takes the focus once drawn, unless the page says what the action that opened it did, which
  // takes it itself. The live readings of a page draw it again without opening it.
  const arrival = useRef<Arrival>({ pending: false, heading: undefined }).current;
  const shownPage = useRef(page);
  if (shownPage.current !== page) {
    shownPage.current = page;
    arrival.pending = message?.focus !== true;
    arrival.heading = undefined;
  }
  // The focus moved meanwhile (a Tab, a click, the skip link): it stays where it was put.
  useEffect(() => {
    const moved = (event: FocusEvent) => {
      if (event.target === arrival.heading) return;
      arrival.pending = false;
      arrival.heading = undefined;
    };
    document.addEventListener('focusin', moved);
    return () => document.removeEventListener('focusin', moved);
  }, []);
  // Signed out: the sign-in form is no page of queues.
  useEffect(
    () => () => {
      document.title = APP_TITLE;
    },
    [],
  );
  return (
    <SessionContext.Provider value={session}>
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link, which moves the focus itself */}
      <a
        class="skip"
        href="#main"
        onClick={(event) => {
          // The hash addresses the pages: followed, "#main" would open "No such page".
          event.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href.overview()}>
          <img src="./favicon.svg" alt="" width={20} height={20} />
          leaseq
        </a>
        <nav class="main-nav" aria-label="Main">
          <a href={href.overview()} aria-current={route.page === 'overview' ? 'page' : undefined}>
            Queues
          </a>
        </nav>
        <LiveControl />
        <div class="who">
          <span title="The API key in use">
            {session.me.keysRequired ? `Key: ${session.me.name}` : 'No keys (loopback)'}
          </span>
          {session.me.keysRequired ? (
            <button type="button" onClick={session.signOut}>
              Sign out
            </button>
          ) : null}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <PageMessage message={message} />
        <PageMessageContext.Provider value={go}>
          <ArrivalContext.Provider value={arrival}>
            <Page route={route} />
          </ArrivalContext.Provider>
        </PageMessageContext.Provider>
      </main>
    </SessionContext.Provider>
  );
}
