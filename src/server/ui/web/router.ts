import { useEffect, useState } from 'preact/hooks';

/** The pages, addressed by the URL's hash (the server serves one file at /ui/). */
export type Route =
  | { page: 'overview' }
  | { page: 'queue'; queue: string }
  | { page: 'deadLetters'; queue: string }
  | { page: 'job'; queue: string; id: string }
  | { page: 'notFound' };

const part = encodeURIComponent;

export const href = {
  overview: () => '#/',
  queue: (queue: string) => `#/queues/${part(queue)}`,
  deadLetters: (queue: string) => `#/queues/${part(queue)}/dead-letters`,
  job: (queue: string, id: string) => `#/queues/${part(queue)}/jobs/${part(id)}`,
};

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  let decoded: string[];
  try {
    decoded = parts.map(decodeURIComponent);
  } catch {
    return { page: 'notFound' };
  }
  const [first, queue, section, id] = decoded;
  if (first === undefined) return { page: 'overview' };
  if (first !== 'queues' || queue === undefined) return { page: 'notFound' };
  if (section === undefined) return { page: 'queue', queue };
  if (section === 'dead-letters' && id === undefined) return { page: 'deadLetters', queue };
  if (section === 'jobs' && id !== undefined && decoded.length === 4) {
    return { page: 'job', queue, id };
  }
  return { page: 'notFound' };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
