import { useEffect, useState } from 'preact/hooks';

/**
 * The pages, addressed by the URL's hash (the server serves one file at /ui/). What a page is
 * showing (the overview's page of queues and name filter, the reason the dead letters are
 * filtered by) is in the hash too, after a `?`: Back to the page, a reload or a link shows it
 * again.
 */
export type Route =
  | {
      page: 'overview';
      /** The name filter as typed ('' for none). */
      filter: string;
      /** Which page of queues, from 0. */
      at: number;
    }
  | { page: 'queue'; queue: string }
  | {
      page: 'deadLetters';
      queue: string;
      /** The reason filtered by ('' for all). */
      reason: string;
    }
  | { page: 'job'; queue: string; id: string }
  | { page: 'notFound' };

const part = encodeURIComponent;

/** The longest name filter: the longest queue name (the server refuses a longer one). */
export const MAX_FILTER_LENGTH = 80;

/** `path`, with a query of the entries that are not empty. */
function withQuery(path: string, entries: [string, string][]): string {
  const query = new URLSearchParams(entries.filter(([, value]) => value !== '')).toString();
  return query === '' ? path : `${path}?${query}`;
}

export const href = {
  overview: (view: { filter?: string; at?: number } = {}) =>
    withQuery('#/', [
      ['filter', view.filter ?? ''],
      ['page', view.at === undefined || view.at <= 0 ? '' : String(view.at + 1)],
    ]),
  queue: (queue: string) => `#/queues/${part(queue)}`,
  deadLetters: (queue: string, reason = '') =>
    withQuery(`#/queues/${part(queue)}/dead-letters`, [['reason', reason]]),
  job: (queue: string, id: string) => `#/queues/${part(queue)}/jobs/${part(id)}`,
};

/** The page a path names, what it shows aside (`query`). */
function parsePath(path: string, query: URLSearchParams): Route {
  const parts = path.split('/').filter(Boolean);
  let decoded: string[];
  try {
    decoded = parts.map(decodeURIComponent);
  } catch {
    return { page: 'notFound' };
  }
  // The API is called at paths made of these (`../v1/queues/{queue}/jobs/{id}`), where a URL
  // resolves `.` and `..` away: the page would read, and its buttons act on, other routes.
  // No queue has such a name, and no job with such an id can be read by its URL.
  if (decoded.some((segment) => segment === '.' || segment === '..')) return { page: 'notFound' };
  const [first, queue, section, id] = decoded;
  if (first === undefined) {
    const page = query.get('page') ?? '';
    return {
      page: 'overview',
      filter: (query.get('filter') ?? '').slice(0, MAX_FILTER_LENGTH),
      at: /^[1-9]\d{0,8}$/.test(page) ? Number(page) - 1 : 0,
    };
  }
  if (first !== 'queues' || queue === undefined) return { page: 'notFound' };
  if (section === undefined) return { page: 'queue', queue };
  if (section === 'dead-letters' && id === undefined) {
    return { page: 'deadLetters', queue, reason: query.get('reason') ?? '' };
  }
  if (section === 'jobs' && id !== undefined && decoded.length === 4) {
    return { page: 'job', queue, id };
  }
  return { page: 'notFound' };
}

export function parseRoute(hash: string): Route {
  const whole = hash.replace(/^#\/?/, '');
  const mark = whole.indexOf('?');
  if (mark < 0) return parsePath(whole, new URLSearchParams());
  const route = parsePath(whole.slice(0, mark), new URLSearchParams(whole.slice(mark + 1)));
  // A job's id typed into the address with a ? as it is (links encode it) is the id itself.
  return route.page === 'job' || route.page === 'notFound'
    ? parsePath(whole, new URLSearchParams())
    : route;
}

/** The page a route names, without what it shows: the same page for every filter. */
export const pageKey = (route: Route): string =>
  JSON.stringify([route.page, 'queue' in route ? route.queue : '', 'id' in route ? route.id : '']);

const replaced = new Set<() => void>();

/**
 * Shows `hash` in the address in place of the page's own, without a new entry in the history:
 * what a page is showing changed (a filter typed, another page of queues), and Back, a reload or
 * a copied link shows it again. The route follows at once, as it does a hash change.
 */
export function replaceRoute(hash: string): void {
  if (location.hash === hash) return;
  history.replaceState(history.state, '', hash);
  for (const listener of [...replaced]) listener();
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    replaced.add(onChange);
    return () => {
      removeEventListener('hashchange', onChange);
      replaced.delete(onChange);
    };
  }, []);
  return route;
}
