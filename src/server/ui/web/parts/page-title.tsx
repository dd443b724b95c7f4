import { type ComponentChildren, createContext, type RefObject } from 'preact';
import { useContext, useEffect, useRef } from 'preact/hooks';

/**
 * Where the focus goes once another page is opened (a link followed, Back or Forward): to the
 * page's heading, as soon as it is drawn. Without it the focus stays on the body, or on a link
 * no longer there, so a screen reader says nothing and the next Tab starts the document over.
 * The frame (`Shell`) sets `pending` when the page changes; a heading takes it, once.
 */
export interface Arrival {
  /** Another page was opened, and the focus has not moved since: its heading is to take it. */
  pending: boolean;
  /**
   * The heading that took the focus on arrival, until the focus moves on. Replaced while it has
   * it (a queue page found to have no queue says so in a heading of its own), the focus falls
   * to the body: the heading drawn in its place takes it over.
   */
  heading: HTMLElement | undefined;
}

/** The arrival of the frame around the pages; none outside it. */
export const ArrivalContext = createContext<Arrival>({ pending: false, heading: undefined });

/**
 * A page's heading (level 1), focusable by script alone (`tabIndex` -1): it takes the focus
 * when its page was just opened, or in place of the page's heading that had it. `headingRef`,
 * when given, is set to the element.
 */
export function PageTitle(props: {
  id: string;
  headingRef?: RefObject<HTMLHeadingElement | null>;
  children: ComponentChildren;
}) {
  const own = useRef<HTMLHeadingElement>(null);
  const heading = props.headingRef ?? own;
  const arrival = useContext(ArrivalContext);
  useEffect(() => {
    const element = heading.current;
    if (element === null) return;
    const active = document.activeElement;
    const replaced =
      arrival.heading !== undefined &&
      !arrival.heading.isConnected &&
      (active === null || active === document.body);
    if (!arrival.pending && !replaced) return;
    arrival.pending = false;
    arrival.heading = element;
    element.focus();
  }, []);
  return (
    <h1 id={props.id} tabIndex={-1} ref={heading}>
      {props.children}
    </h1>
  );
}
