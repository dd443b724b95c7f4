import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { API_KEY_RULE, Api, ApiError, isApiKey } from './api.js';
import { PollingFeed } from './feed.js';
import { StatsHistory } from './history.js';
import { keyStore } from './key-store.js';
import type { Session } from './session.js';
import { Shell } from './shell.js';
import type { AllStats, QueueStats } from './wire.js';

type Start =
  | { step: 'checking' }
  | { step: 'login'; problem?: string }
  | { step: 'ready'; session: Session }
  | { step: 'failed'; problem: string };

/** How often the pages read what they show, ms. */
const INTERVAL_MS = 2000;

/** Opens a session: who the key is, then live figures every 2 s. */
async function openSession(onSignOut: () => void): Promise<Session> {
  // A read unanswered for three intervals is given up (the feed says "Not updating" sooner).
  const api = new Api(() => keyStore.get(), { readMs: 3 * INTERVAL_MS });
  const me = await api.me();
  const feed = new PollingFeed(api, INTERVAL_MS);
  const history = new StatsHistory();
  const clock = { skewMs: 0 };
  // Every figure read goes to the history before a page draws it; only what the open page
  // shows is read (the overview its page of queues, a queue's page that queue's alone).
  const skew = (queueTime: number, at: number) => {
    if (queueTime > 0) clock.skewMs = queueTime - at;
  };
  feed.onRead((topic, update) => {
    if (update.data === undefined || update.error !== undefined) return;
    if (topic.kind === 'stats') {
      const all = update.data as AllStats;
      history.add(all, topic.page);
      skew(
        all.queues.reduce((newest, entry) => Math.max(newest, entry.stats.queueTime), 0),
        update.at,
      );
    } else if (topic.kind === 'queueStats' && topic.queue !== undefined) {
      const stats = update.data as QueueStats;
      history.addQueue(topic.queue, stats);
      skew(stats.queueTime, update.at);
    }
  });
  return {
    api,
    feed,
    history,
    me,
    clock,
    signOut() {
      feed.close();
      keyStore.clear();
      onSignOut();
    },
  };
}

function LoginForm(props: { problem?: string; onKey(key: string): void }) {
  const [key, setKey] = useState('');
  return (
    <main id="main" class="login">
      <form
        class="panel"
        aria-labelledby="login-title"
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim() !== '') props.onKey(key.trim());
        }}
      >
        <h1 id="login-title">leaseq dashboard</h1>
        <p class="muted">
          This server needs an API key. It is kept in this tab only, until you sign out or close it.
        </p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          aria-invalid={props.problem === undefined ? undefined : true}
          aria-describedby={props.problem === undefined ? undefined : 'login-problem'}
          required
        />
        {props.problem ? (
          <p id="login-problem" class="notice error" role="alert">
            {props.problem}
          </p>
        ) : null}
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
    </main>
  );
}

function App() {
  const [start, setStart] = useState<Start>({ step: 'checking' });
  const begin = () => {
    // A key no request can carry would fail every call, reloads included: it goes at once.
    const stored = keyStore.get();
    if (stored !== undefined && !isApiKey(stored)) {
      keyStore.clear();
      setStart({
        step: 'login',
        problem: `The API key kept in this tab cannot be sent, so it was forgotten: ${API_KEY_RULE}.`,
      });
      return;
    }
    openSession(() => setStart({ step: 'login' }))
      .then((session) => setStart({ step: 'ready', session }))
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 401) {
          const hadKey = keyStore.get() !== undefined;
          keyStore.clear();
          setStart({ step: 'login', ...(hadKey ? { problem: 'That API key is not valid.' } : {}) });
        } else {
          setStart({ step: 'failed', problem: (error as Error).message });
        }
      });
  };
  useEffect(begin, []);
  switch (start.step) {
    case 'checking':
      return <p class="muted centered">Connecting…</p>;
    case 'failed':
      return (
        <main id="main" class="login">
          <p class="notice error" role="alert">
            The server did not answer: {start.problem}
          </p>
          <div class="toolbar-actions">
            <button type="button" onClick={begin}>
              Try again
            </button>
            {keyStore.get() === undefined ? null : (
              <button
                type="button"
                onClick={() => {
                  keyStore.clear();
                  setStart({ step: 'login' });
                }}
              >
                Sign out
              </button>
            )}
          </div>
        </main>
      );
    case 'login':
      return (
        <LoginForm
          {...(start.problem === undefined ? {} : { problem: start.problem })}
          onKey={(key) => {
            // Refused here, unstored: the browser could not send it, nor the server take it.
            if (!isApiKey(key)) {
              setStart({ step: 'login', problem: `That is not an API key: ${API_KEY_RULE}.` });
              return;
            }
            keyStore.set(key);
            setStart({ step: 'checking' });
            begin();
          }}
        />
      );
    case 'ready':
      return <Shell session={start.session} />;
  }
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
