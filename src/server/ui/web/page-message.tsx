import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import { parseRoute, type Route } from './router.js';

/**
 * Opens the page at `hash` and says `text` on it: an action whose page is gone once done (a
 * queue deleted from its own page) says what it did on the page it went to.
 */
export type GoWithMessage = (hash: string, text: string) => void;

export const PageMessageContext = createContext<GoWithMessage | undefined>(undefined);

export function useGoWithMessage(): GoWithMessage {
  const go = useContext(PageMessageContext);
  if (go === undefined) throw new Error('no page message');
  return go;
}

const routeKey = (route: Route) => JSON.stringify(route);

/**
 * The message of the page shown, if any, and what leaves a page with one. A message stays on
 * its page until another page is opened.
 */
export function usePageMessage(route: Route): { text: string | undefined; go: GoWithMessage } {
  const [message, setMessage] = useState<{ text: string; route: string }>();
  const shown = routeKey(route);
  useEffect(() => {
    if (message !== undefined && message.route !== shown) setMessage(undefined);
  }, [shown]);
  const go = useCallback<GoWithMessage>((hash, text) => {
    setMessage({ text, route: routeKey(parseRoute(hash)) });
    location.hash = hash;
  }, []);
  return { text: message?.route === shown ? message.text : undefined, go };
}
