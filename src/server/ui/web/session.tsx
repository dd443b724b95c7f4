import { createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { type Api, isGone } from './api.js';
import type { Feed, FeedState, Kind, Reads, Topic, Update } from './feed.js';
import { topicKey } from './feed.js';
import type { StatsHistory } from './history.js';
import type { Action, Me } from './wire.js';

/** Everything a page needs: the API, live data, what the key may do. */
export interface Session {
  api: Api;
  feed: Feed;
  history: StatsHistory;
  me: Me;
  /** The server's clock minus the browser's (ms), updated at each read of figures. */
  clock: { skewMs: number };
  signOut(): void;
}

export const SessionContext = createContext<Session | undefined>(undefined);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === undefined) throw new Error('no session');
  return session;
}

/** Whether the key may do `action` on `queue` (the server checks again anyway). */
export function can(me: Me, action: Action, queue: string): boolean {
  // A queue made after sign-in is not in `queues` yet: the key's grants say what it may do.
  const rights =
    me.queues.find((entry) => entry.name === queue)?.actions ??
    me.grants
      .filter((grant) => matchesPattern(grant.queues, queue))
      .flatMap((grant) => grant.actions);
  return rights.includes(action) || rights.includes('admin');
}

/** A grant's queue pattern as the server reads it: `*` is any run of characters. */
function matchesPattern(pattern: string, queue: string): boolean {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`).test(queue);
}

/** How a page follows a topic. */
export interface Following {
  /**
   * Stop reading once the thing is gone (404), keeping that last update: a job acked, purged
   * or moved is not expected back, and asking for it every interval would ask for ever.
   */
  untilGone?: boolean;
  /**
   * A change of it subscribes again (and reads again at once): a page's "Check again". The
   * last update stays meanwhile, so that the page, and the focus on its button, stay too.
   */
  round?: number;
}

/** The latest update of a topic, live; none read while `topic` is undefined. */
export function useTopic<K extends Kind>(
  topic: Topic<K> | undefined,
  following: Following = {},
): Update<Reads[K]> | undefined {
  const { feed } = useSession();
  const key = topic === undefined ? undefined : topicKey(topic);
  const { untilGone = false, round = 0 } = following;
  const [update, setUpdate] = useState<Update<Reads[K]>>();
  /** The topic of `update`: another one's is not shown while this one is read. */
  const shown = useRef(key);
  useEffect(() => {
    if (shown.current !== key) setUpdate(undefined);
    shown.current = key;
    if (topic === undefined) return undefined;
    let gone = false;
    let unsubscribe: (() => void) | undefined;
    const stop = () => {
      unsubscribe?.();
      unsubscribe = undefined;
    };
    unsubscribe = feed.subscribe(topic, (next) => {
      setUpdate(next);
      if (untilGone && isGone(next.error)) {
        gone = true;
        stop();
      }
    });
    // The feed may answer at once, with what it read for another page: gone already.
    if (gone) stop();
    return stop;
  }, [feed, key, untilGone, round]);
  return update;
}

export function useFeedState(): FeedState {
  const { feed } = useSession();
  const [state, setState] = useState(feed.state);
  useEffect(() => feed.onState(setState), [feed]);
  return state;
}

/** The server's time now, ticking every second (for countdowns). */
export function useServerNow(): number {
  const { clock } = useSession();
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return now + clock.skewMs;
}
