import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { pageKey, parseRoute, type Route } from './router.js';

/**
 * Opens the page at `hash` and says `text` on it: an action whose page is gone once done (a
 * queue deleted from its own page) says what it did on the page it went to. With `from`, the
 * hash of the page the action was started on: when another page is shown by then (opened while
 * the action was on its way), that page stays and says `text` instead.
 */
export type GoWithMessage = (hash: string, text: string, from?: string) => void;

export const PageMessageContext = createContext<GoWithMessage | undefined>(undefined);

export function useGoWithMessage(): GoWithMessage {
  const go = useContext(PageMessageContext);
  if (go === undefined) throw new Error('no page message');
  return go;
}

/** The page, whatever it is showing: a message stays while its filter or page of queues changes. */
const routeKey = pageKey;

interface Message {
  text: string;
  route: string;
  /** Said on a page the action went to: the focus goes to it (else it is left on the body). */
  focus: boolean;
  /** Each message its own, so that one said again is drawn (and focused) again. */
  id: number;
}

/**
 * The message of the page shown, if any, and what leaves a page with one. A message stays on
 * its page until another page is opened.
 */
export function usePageMessage(route: Route): {
  message: Message | undefined;
  go: GoWithMessage;
} {
  const [message, setMessage] = useState<Message>();
  const count = useRef(0);
  const shown = routeKey(route);
  useEffect(() => {
    if (message !== undefined && message.route !== shown) setMessage(undefined);
  }, [shown]);
  const go = useCallback<GoWithMessage>((hash, text, from) => {
    count.current += 1;
    // The hash, not the route drawn: it is the page shown now, even before it is drawn.
    const now = routeKey(parseRoute(location.hash));
    if (from !== undefined && routeKey(parseRoute(from)) !== now) {
      // The operator went on to another page meanwhile: taken away from it, they would lose it.
      setMessage({ text, route: now, focus: false, id: count.current });
      return;
    }
    setMessage({ text, route: routeKey(parseRoute(hash)), focus: true, id: count.current });
    location.hash = hash;
  }, []);
  return { message: message?.route === shown ? message : undefined, go };
}

/** The message of the page shown, as a status; focused when the page was opened to say it. */
export function PageMessage(props: { message: Message | undefined }) {
  const { message } = props;
  if (message === undefined) return null;
  return <PageMessageText key={message.id} text={message.text} focus={message.focus} />;
}

function PageMessageText(props: { text: string; focus: boolean }) {
  const paragraph = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    // The control that did it is gone with its page: without this the focus would be on the
    // body, and a screen reader would not read a status drawn with its text already in it.
    if (props.focus) paragraph.current?.focus();
  }, []);
  return (
    <p ref={paragraph} class="notice done" role="status" tabIndex={-1}>
      {props.text}
    </p>
  );
}
