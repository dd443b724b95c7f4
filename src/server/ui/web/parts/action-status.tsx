import { useEffect, useRef, useState } from 'preact/hooks';
import { NoAnswerError } from '../api.js';
import type { Update } from '../feed.js';
import { visible } from '../format.js';

/** What the page says about its latest action. */
interface Said {
  text: string;
  failed: boolean;
  /** It failed for want of any answer: said until the server answers a read again. */
  noAnswer: boolean;
  /** When it was said (browser clock, ms). */
  at: number;
}

export interface ActionState {
  /** What is being done while a call is on its way ("Purging 3 jobs…"); actions wait for it. */
  busy: string | undefined;
  said: Said | undefined;
  /**
   * Runs `action`, saying `doing` meanwhile; its result, or `failed` with the error, after.
   * Resolves to whether it was done (a page the action ends, a deleted queue's, then leaves);
   * false at once, running nothing, while another is on its way.
   */
  run(
    doing: string,
    action: () => Promise<string>,
    failed: (error: string) => string,
  ): Promise<boolean>;
}

/**
 * Why an action failed, in an operator's words: an action the server did not answer in time
 * says that it may still have been done (`Api`), a read it asked first that nothing was.
 */
function failure(error: unknown): string {
  return visible((error as Error).message);
}

/**
 * One page's actions: one at a time, said while on their way and after. `update` is the page's
 * reading: a failure for want of an answer goes once the server answers it again.
 */
export function useActions(update: Update<unknown> | undefined): ActionState {
  const [busy, setBusy] = useState<string>();
  const [said, setSaid] = useState<Said>();
  // One at a time even before `busy` is drawn (two presses in one frame).
  const running = useRef(false);
  const answered = update !== undefined && update.error === undefined ? update.at : 0;
  useEffect(() => {
    if (said?.noAnswer && answered > said.at) setSaid(undefined);
  }, [answered, said]);
  return {
    busy,
    said,
    async run(doing, action, failed) {
      if (running.current) return false;
      running.current = true;
      setBusy(doing);
      try {
        const text = await action();
        setSaid({ text, failed: false, noAnswer: false, at: Date.now() });
        return true;
      } catch (error) {
        setSaid({
          text: failed(failure(error)),
          failed: true,
          noAnswer: error instanceof NoAnswerError,
          at: Date.now(),
        });
        return false;
      } finally {
        running.current = false;
        setBusy(undefined);
      }
    },
  };
}

/** What the page says about its actions: in progress and done in a status, failed in an alert. */
export function ActionStatus(props: { state: ActionState }) {
  const { busy, said } = props.state;
  const failed = busy === undefined && said?.failed === true;
  return (
    <>
      <p
        role="status"
        aria-live="polite"
        class={busy === undefined ? 'notice-ok' : 'notice-ok busy'}
      >
        {busy ?? (failed || said === undefined ? '' : said.text)}
      </p>
      {failed ? (
        <p class="notice error" role="alert">
          {said?.text}
        </p>
      ) : null}
    </>
  );
}
